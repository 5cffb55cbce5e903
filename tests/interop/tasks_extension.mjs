// Long tool calls as tasks on protocol 2026-07-28 (the io.modelcontextprotocol/tasks extension)
// through its official TypeScript requester, @modelcontextprotocol/ext-tasks, on the TypeScript
// SDK's client pinned to 2026-07-28. Against a lab with a real-time plate reader ("reader",
// plate_1 in it) and the Slow test instrument:
//   node tasks_extension.mjs COMMAND [ARGS...]     (stdio)
//   node tasks_extension.mjs http://HOST:PORT/mcp  (streamable HTTP)
// It starts a kinetic read of 240 reads as a task, follows its progress, cancels it, reads the
// cancelled task back, runs a short kinetic read and a Slow count to completion, and makes a call
// the lab refuses. Prints what it saw as one JSON object on stdout and exits 0; exits 1 when the
// client fails (its message on stderr).
//
// ext-tasks sends tools/call and tasks/* of this protocol through a raw request channel that the
// host supplies (the SDK's Client cannot return a task handle from tools/call): here, requests
// written straight to the client's transport, their responses taken off it before the Client
// sees them, matched by ids of their own.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";

const VERSION = "2026-07-28";
const KINETIC = "reader_read_absorbance_kinetic";
const EXTENSION = "io.modelcontextprotocol/tasks";
// the longest a request may take (the SDK's own default, 60 s, is short for a loaded machine)
const TIMEOUT_MS = 240_000;

function kinetic(reads) {
  return {
    plate: "plate_1",
    wells: ["A1"],
    wavelength: { value: 405, unit: "nanometer" },
    interval: { value: 1, unit: "second" },
    reads,
  };
}

/** The raw request channel ext-tasks asks of its host, over `transport`. */
function rawChannel(transport) {
  const waiting = new Map();
  let counter = 0;
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const own = message && !("method" in message) && waiting.get(message.id);
    if (!own) return deliver?.call(transport, message, extra);
    waiting.delete(message.id);
    own(message);
  };
  return async (request, options = {}) => {
    const id = `ext-tasks-${++counter}`;
    let timer;
    const answer = new Promise((resolve, reject) => {
      waiting.set(id, resolve);
      const ms = options.context?.requestTimeoutMs ?? TIMEOUT_MS;
      timer = setTimeout(() => reject(new Error(`${request.method}: no answer in ${ms} ms`)), ms);
      options.signal?.addEventListener("abort", () => reject(options.signal.reason), {
        once: true,
      });
    });
    try {
      await transport.send({ jsonrpc: "2.0", id, ...request }, { headers: options.context?.headers });
      const message = await answer;
      return "error" in message
        ? { kind: "error", error: message.error }
        : { kind: "result", result: message.result };
    } finally {
      clearTimeout(timer);
      waiting.delete(id);
    }
  };
}

/** Polls `controller` until `done(task)` holds (at the task's poll interval). */
async function until(controller, done) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const task = await controller.snapshot();
    if (done(task)) return task;
    if (Date.now() > deadline) throw new Error(`timed out; last: ${JSON.stringify(task)}`);
    await new Promise((resolve) => setTimeout(resolve, task.suggestedPollIntervalMs ?? 1000));
  }
}

const [target, ...args] = process.argv.slice(2);
const transport = /^https?:\/\//.test(target)
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args, env: process.env, stderr: "inherit" });
const clientInfo = { name: "labtools-interop-tasks", version: "1" };
const client = new Client(clientInfo, { versionNegotiation: { mode: { pin: VERSION } } });
let session;
try {
  await client.connect(transport, { timeout: TIMEOUT_MS });
  const report = {
    protocolVersion: client.getNegotiatedProtocolVersion(),
    extension: client.getServerCapabilities()?.extensions?.[EXTENSION] ?? null,
  };
  session = createTaskSessionFromClient(client, {
    endpointId: "labtools-interop",
    rawDispatch: rawChannel(transport),
    v2RequestFraming: { protocolVersion: VERSION, clientInfo, clientCapabilities: {} },
  });

  // a long kinetic read: a task, working, its progress in statusMessage; then cancelled
  const reading = await session.callTool(KINETIC, kinetic(240));
  report.long = { kind: reading.kind, progress: [] };
  const reads = new Set();
  for await (const event of reading.updates()) {
    if (event.type !== "task") break;
    report.long.progress.push(`${event.task.status}: ${event.task.statusMessage}`);
    const read = /read (\d+) of 240/.exec(event.task.statusMessage ?? "")?.[1];
    if (read !== undefined) reads.add(read);
    if (reads.size >= 2) break; // seen advancing
  }
  await reading.cancel();
  report.long.outcome = (await reading.result()).status;
  const stopped = await until(session.task(reading.handle.taskId), (task) =>
    /stopped after/.test(task.statusMessage ?? ""),
  );
  report.long.final = {
    status: stopped.status,
    statusMessage: stopped.statusMessage,
    result: stopped.raw._meta?.["labtools/result"] ?? null,
  };

  // a short kinetic read and a Slow count (a tool that runs only as a task), to completion
  for (const [key, name, params] of [
    ["short", KINETIC, kinetic(2)],
    ["count", "slow_count", { steps: 10 }],
  ]) {
    const execution = await session.callTool(name, params);
    const { outcome, lastTask } = await execution.settle();
    report[key] = {
      kind: execution.kind,
      status: outcome.status,
      statusMessage: lastTask?.statusMessage ?? null,
      result: outcome.result ?? null,
    };
  }

  // a call the lab refuses: answered at once, a tool error
  const refused = await session.callTool(KINETIC, kinetic(1));
  const { outcome } = await refused.settle();
  report.refused = { kind: refused.kind, status: outcome.status, result: outcome.result ?? null };
  process.stdout.write(JSON.stringify(report) + "\n");
} catch (error) {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exitCode = 1;
} finally {
  await session?.close();
  await client.close();
}
