"""Tool-call loops for LLM APIs: run a model's tool calls on a lab, answer in its own format.

One module per provider (``labtools.providers.openai``, ``.anthropic``, ``.gemini``); each needs
that provider's official SDK, an optional extra. Importing labtools never imports them.
"""
