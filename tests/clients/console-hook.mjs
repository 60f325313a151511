// Preloaded (NODE_OPTIONS=--import) into every Node process a CLI client starts, so what its SDK
// logs through console.error/console.warn is kept even where the process's stderr is discarded
// (acpx's detached queue owner, which holds the ACP connection, ignores its stderr once started).
// Each call becomes one line in $CLIENTS_CONSOLE_LOG: "<pid> console.<kind>: <text>".
import { appendFileSync } from "node:fs";
import { inspect } from "node:util";

const file = process.env.CLIENTS_CONSOLE_LOG;
if (file) {
  for (const kind of ["error", "warn"]) {
    const orig = console[kind].bind(console);
    console[kind] = (...args) => {
      const text = args.map((a) => (typeof a === "string" ? a : inspect(a, { depth: 8, breakLength: Infinity }))).join(" ");
      try { appendFileSync(file, `${process.pid} console.${kind}: ${text.replace(/\n/g, "\\n")}\n`); } catch { /* the log's directory is gone */ }
      orig(...args);
    };
  }
}
