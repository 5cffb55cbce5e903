// One tools/call through the official TypeScript MCP client (@modelcontextprotocol/client),
// without listing the tools first: what a host built on that SDK receives.
//   node call_tool.mjs NAME 'JSON ARGUMENTS' COMMAND [ARGS...]     (stdio)
//   node call_tool.mjs NAME 'JSON ARGUMENTS' http://HOST:PORT/mcp  (streamable HTTP)
// Prints the CallToolResult as JSON on stdout and exits 0, whether or not the result is an
// error; exits 1 when the client itself fails (its message on stderr).
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

// the SDK's own ceiling per request (60 s) is too short for a server starting on a loaded machine
const TIMEOUT_MS = 240_000;

const [name, argumentsJson, target, ...args] = process.argv.slice(2);
const transport = /^https?:\/\//.test(target)
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "labtools-interop", version: "1" });
try {
  await client.connect(transport, { timeout: TIMEOUT_MS });
  const result = await client.callTool(
    { name, arguments: JSON.parse(argumentsJson) },
    { timeout: TIMEOUT_MS },
  );
  process.stdout.write(JSON.stringify(result) + "\n");
} catch (error) {
  process.stderr.write(`${error}\n`);
  process.exitCode = 1;
} finally {
  await client.close();
}
