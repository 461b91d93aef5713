// A client on the official MCP TypeScript SDK (pinned in package-lock.json) for
// tests/test_mcp_ts_client.py: it spawns `python -m quickjail mcp ARGS...` over stdio, makes
// each call of the JSON list in $QUICKJAIL_TS_CALLS in order on one session, and prints one
// JSON line: per call, what arrived or the error the SDK raised.
//
// usage: node client.mjs PYTHON [server args...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [python, ...serverArgs] = process.argv.slice(2);
const calls = JSON.parse(process.env.QUICKJAIL_TS_CALLS ?? "[]");
const env = {};
for (const name of ["PYTHONPATH", "QUICKJAIL_CACHE_DIR", "QUICKJAIL_SECRET_KEY"]) {
  if (process.env[name] !== undefined) env[name] = process.env[name];
}
const transport = new StdioClientTransport({
  command: python,
  args: ["-m", "quickjail", "mcp", ...serverArgs],
  env,
  stderr: "inherit",
});
const transportErrors = [];
const client = new Client({ name: "quickjail-ts-test", version: "1.0.0" });
client.onerror = (error) => transportErrors.push(String(error?.message ?? error));
await client.connect(transport);

const results = [];
for (const call of calls) {
  try {
    const result = await client.callTool({ name: call.name, arguments: call.arguments });
    const first = result.content?.[0];
    const text = first?.type === "text" ? first.text : "";
    const structured = result.structuredContent;
    results.push({
      ok: true,
      isError: result.isError === true,
      contentTypes: (result.content ?? []).map((c) => c.type),
      textLength: text.length,
      textStart: text.slice(0, 200),
      textEnd: text.slice(-300),
      hasStructured: structured !== undefined,
      structuredStatus: structured?.status ?? null,
      structuredResultType: structured === undefined ? null : typeof structured.result,
      structuredResultLength:
        typeof structured?.result === "string" ? structured.result.length : null,
      structuredResultEnd:
        typeof structured?.result === "string" ? structured.result.slice(-300) : null,
      structuredResultValue:
        structured !== undefined && typeof structured.result !== "string"
          ? structured.result
          : null,
    });
  } catch (error) {
    results.push({ ok: false, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify({ results, transportErrors }) + "\n");
await client.close();
