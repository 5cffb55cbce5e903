"""Virtual instruments that behave like real ones, the physical world they share, and the
grounded tasks built on them."""
