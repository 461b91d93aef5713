"""Code written for a Worker runs as written: a model-style program using the web platform.

The program below is what a model writes for a Cloudflare Worker or Deno: it reads a file
through a host capability and decodes it with ``TextDecoder``, builds a ``URL``, retries a
flaky step with exponential backoff on ``setTimeout``, waits on ``AbortSignal.timeout`` and
hashes with ``crypto.subtle.digest``. Nothing in it is specific to quickjail; it runs with
``kind="auto"`` (a script with a top-level ``return``), fenced as a model would send it.
"""

from __future__ import annotations

import json
import pathlib
import tempfile

import quickjail
from quickjail import bridge

FENCE = "`" * 3
PROGRAM = f"""{FENCE}js
const bytes = await fs.readFile("config.json");
const config = JSON.parse(new TextDecoder().decode(bytes));

const url = new URL("/v1/search", config.endpoint);
url.searchParams.set("q", "weather in Paris");

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function withRetry(fn, attempts = 4) {{
  for (let i = 0; ; i++) {{
    try {{
      return await fn(i);
    }} catch (err) {{
      if (i + 1 >= attempts) throw err;
      console.log(`retrying after: ${{err.message}}`);
      await sleep(10 * 2 ** i);
    }}
  }}
}}
const outcome = await withRetry(async (i) => {{
  if (i < 2) throw new Error(`attempt ${{i + 1}} failed`);
  return `ok on attempt ${{i + 1}}`;
}});

const signal = AbortSignal.timeout(25);
const aborted = await new Promise((resolve) =>
  signal.addEventListener("abort", () => resolve(signal.reason.name)),
);

const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(url.href));
const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");

const uuid = crypto.randomUUID().length;
return {{ href: url.href, outcome, aborted, sha256: hex.slice(0, 12), uuid }};
{FENCE}"""


def main() -> None:
    """Run the program against a temporary folder holding its config file."""
    root = tempfile.mkdtemp()
    config = {"endpoint": "https://api.example.com/base/"}
    pathlib.Path(root, "config.json").write_text(json.dumps(config))
    with bridge.ReadOnlyDir(root) as fs:
        r = quickjail.run_code_sync(PROGRAM, kind="auto", globals={"fs": fs}, timeout=10)
    r.raise_for_status()
    for entry in r.logs:
        print("log    ->", *entry.args)
    print("result ->", r.result)


if __name__ == "__main__":
    main()
