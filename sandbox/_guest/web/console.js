(native) => {
  const G = globalThis, console = G.console, apply = Reflect.apply, dp = Object.defineProperty;
  const S = String, AP = Array.prototype, SP = String.prototype, E = Error, M = Map;
  const uncurry = (f) => (self, ...args) => apply(f, self, args);
  const push = uncurry(AP.push), join = uncurry(AP.join), aslice = uncurry(AP.slice);
  const unshift = uncurry(AP.unshift), isArray = Array.isArray, from = Array.from;
  const slice = uncurry(SP.slice), split = uncurry(SP.split), repeat = uncurry(SP.repeat);
  const indexOf = uncurry(SP.indexOf), padEnd = uncurry(SP.padEnd), replaceAll = uncurry(SP.replaceAll);
  const toFixed = uncurry(Number.prototype.toFixed), keys = Object.keys;
  const mapGet = uncurry(M.prototype.get), mapSet = uncurry(M.prototype.set);
  const mapHas = uncurry(M.prototype.has), mapDelete = uncurry(M.prototype.delete);
  const pInt = parseInt, pFloat = parseFloat, now = native.now;
  const LEVELS = ["log", "info", "warn", "error", "debug"];
  // the C functions of builtins.c: what every console method ends in
  const out = { __proto__: null };
  for (const level of LEVELS) out[level] = console[level];
  native.console = out;

  // WHATWG Console "Formatter": %s %d %i %f %o %O %c in a first string argument, and %%.
  // %o and %O keep the value itself as a separate argument, so it crosses as data.
  function format(args) {
    if (args.length < 2 || typeof args[0] !== "string" || indexOf(args[0], "%") < 0) return args;
    const target = args[0], result = [];
    let text = "", last = 0, next = 1, trim = false;
    for (let p = 0; p < target.length - 1; p++) {
      if (target[p] !== "%") continue;
      const c = target[p + 1];
      if (c === "%") {
        text += slice(target, last, p) + "%";
        last = p + 2;
        p++;
        continue;
      }
      if (indexOf("sdifoOc", c) < 0 || next >= args.length) continue;
      const current = args[next++];
      let piece = slice(target, last, p);
      if (trim && piece[0] === " ") piece = slice(piece, 1);
      text += piece;
      trim = false;
      last = p + 2;
      p++;
      if (c === "s") text += S(current);
      else if (c === "d" || c === "i") text += typeof current === "symbol" ? "NaN" : S(pInt(current, 10));
      else if (c === "f") text += typeof current === "symbol" ? "NaN" : S(pFloat(current));
      else if (c === "o" || c === "O") {
        if (text[text.length - 1] === " ") text = slice(text, 0, -1);
        if (text !== "") push(result, text);
        push(result, current);
        text = "";
        trim = true;
      }
    }
    let rest = slice(target, last);
    if (trim && rest[0] === " ") rest = slice(rest, 1);
    text += rest;
    if (text !== "" || result.length === 0) push(result, text);
    for (let i = next; i < args.length; i++) push(result, args[i]);
    return result;
  }

  let depth = 0;   // console.group nesting: later lines are indented by two spaces a level
  function emit(level, args) {
    if (depth > 0) {
      const pad = repeat("  ", depth);
      args = aslice(args);
      for (let i = 0; i < args.length; i++)
        if (typeof args[i] === "string") args[i] = replaceAll(args[i], "\n", "\n" + pad);
      if (typeof args[0] === "string") args[0] = pad + args[0];
      else unshift(args, slice(pad, 1));
    }
    // the C function answers true once the host's log is full: later calls stop here
    if (apply(out[level], undefined, args) === true) closed = true;
  }
  let closed = false;
  const log = (level, data) => { if (!closed) emit(level, format(data)); };

  function method(name, fn) {
    dp(fn, "name", { value: name });
    dp(console, name, { value: fn, writable: true, enumerable: true, configurable: true });
  }
  for (const level of LEVELS) method(level, function (...data) { log(level, data); });

  method("assert", function (condition = false, ...data) {
    if (condition) return;
    const message = "Assertion failed";
    if (data.length === 0) push(data, message);
    else if (typeof data[0] === "string") data[0] = message + ": " + data[0];
    else unshift(data, message);
    log("error", data);
  });

  const counts = new M();
  method("count", function (label = "default") {
    label = S(label);
    const n = (mapGet(counts, label) || 0) + 1;
    mapSet(counts, label, n);
    log("log", [label + ": " + n]);
  });
  method("countReset", function (label = "default") {
    label = S(label);
    if (mapHas(counts, label)) mapSet(counts, label, 0);
    else log("warn", [`Count for '${label}' does not exist`]);
  });

  const timers = new M();
  const elapsed = (label) => toFixed(now() - mapGet(timers, label), 3) + "ms";
  method("time", function (label = "default") {
    label = S(label);
    if (mapHas(timers, label)) log("warn", [`Timer '${label}' already exists`]);
    else mapSet(timers, label, now());
  });
  method("timeLog", function (label = "default", ...data) {
    label = S(label);
    if (!mapHas(timers, label)) return log("warn", [`Timer '${label}' does not exist`]);
    unshift(data, label + ": " + elapsed(label));
    log("log", data);
  });
  method("timeEnd", function (label = "default") {
    label = S(label);
    if (!mapHas(timers, label)) return log("warn", [`Timer '${label}' does not exist`]);
    const text = label + ": " + elapsed(label);
    mapDelete(timers, label);
    log("log", [text]);
  });

  method("group", function (...data) {
    if (data.length) log("log", data);
    depth++;
  });
  method("groupCollapsed", function (...data) {
    if (data.length) log("log", data);
    depth++;
  });
  method("groupEnd", function () { if (depth > 0) depth--; });

  // a short text for a value inside a line (console.table cells, console.trace)
  function short(v, level = 0) {
    if (typeof v === "string") return level ? `'${v}'` : v;
    if (typeof v === "bigint") return S(v) + "n";
    if (typeof v === "symbol") return S(v);
    if (typeof v === "function") return `[Function: ${v.name || "(anonymous)"}]`;
    if (v === null || typeof v !== "object") return S(v);
    if (level > 1) return isArray(v) ? "[Array]" : "[Object]";
    if (isArray(v)) {
      const items = [];
      for (let i = 0; i < v.length && i < 20; i++) push(items, short(v[i], level + 1));
      return items.length ? `[ ${join(items, ", ")} ]` : "[]";
    }
    const items = [], ks = keys(v);
    for (let i = 0; i < ks.length && i < 20; i++) push(items, `${ks[i]}: ${short(v[ks[i]], level + 1)}`);
    return items.length ? `{ ${join(items, ", ")} }` : "{}";
  }

  method("table", function (tabularData = undefined, properties = undefined) {
    const data = tabularData;
    if (data === null || typeof data !== "object") return log("log", [data]);
    let rows, indexTitle = "(index)";
    if (data instanceof M) {
      indexTitle = "(iteration index)";
      rows = from(data, ([k, v], i) => [S(i), { __proto__: null, Key: k, Values: v }, false]);
    } else if (data instanceof Set) {
      indexTitle = "(iteration index)";
      rows = from(data, (v, i) => [S(i), v, true]);
    } else {
      rows = from(keys(data), (k) => [k, data[k], false]);
    }
    const columns = [], values = "Values";
    let hasValues = false;
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r][1];
      if (row !== null && typeof row === "object" && !rows[r][2]) {
        const ks = keys(row);
        for (let i = 0; i < ks.length; i++) if (columns.indexOf(ks[i]) < 0) push(columns, ks[i]);
      } else {
        hasValues = true;
      }
    }
    const shown = isArray(properties) ? from(properties, S) : columns;
    const head = [indexTitle, ...shown];
    if (hasValues) push(head, values);
    const body = from(rows, ([index, row, primitive]) => {
      const cells = [index];
      const isObj = !primitive && row !== null && typeof row === "object";
      for (let i = 0; i < shown.length; i++)
        push(cells, isObj && shown[i] in row ? short(row[shown[i]], 1) : "");
      if (hasValues) push(cells, isObj ? "" : short(row, 1));
      return cells;
    });
    const widths = from(head, (h, c) => {
      let w = h.length;
      for (let r = 0; r < body.length; r++) if (body[r][c].length > w) w = body[r][c].length;
      return w + 2;
    });
    const line = (l, m, r) => l + join(from(widths, (w) => repeat("─", w)), m) + r;
    const row = (cells) => "│" + join(from(cells, (c, i) => padEnd(" " + c, widths[i])), "│") + "│";
    const lines = [line("┌", "┬", "┐"), row(head), line("├", "┼", "┤")];
    for (let r = 0; r < body.length; r++) push(lines, row(body[r]));
    push(lines, line("└", "┴", "┘"));
    log("log", [join(lines, "\n")]);
  });

  method("trace", function (...data) {
    const parts = from(format(data), (v) => short(v));
    const frames = split(S(new E().stack || ""), "\n");
    const kept = [];
    for (let i = 0; i < frames.length; i++)
      if (frames[i] !== "" && indexOf(frames[i], "<quickjail") < 0) push(kept, frames[i]);
    const head = parts.length ? "Trace: " + join(parts, " ") : "Trace";
    emit("debug", [join([head, ...kept], "\n")]);
  });
  method("dir", function (item = undefined, options = undefined) { emit("log", [item]); });
  method("dirxml", function (...data) { log("log", data); });
  // nothing to clear in a log that only grows: clear empties the group stack (Console 1.1.4)
  method("clear", function () { depth = 0; });

  // Web IDL namespace: [[Prototype]] an empty object, @@toStringTag "console", the global
  // property not enumerable
  Object.setPrototypeOf(console, {});
  dp(console, Symbol.toStringTag, { value: "console", configurable: true });
  dp(G, "console", { value: console, writable: true, enumerable: false, configurable: true });
}
// The rest of console (WHATWG Console), on top of builtins.c's five levels (captured here, and
// shared with later files as native.console): a first string argument is formatted (%s %d %i
// %f %c and %%; %o and %O keep the value as its own argument), group/groupCollapsed indent
// later lines by two spaces a level (groupEnd undoes one), count/countReset, time/timeLog/
// timeEnd ("label: 1.234ms", on the run's monotonic clock), assert (level error), table (a
// text table, one string), trace (level debug: "Trace: ..." and the program's frames), dir and
// dirxml (level log), clear (ends every group). console has the Web IDL namespace shape: its
// [[Prototype]] an empty object, @@toStringTag "console", every method an own enumerable
// property. Counters, timers and the group depth are per run (the snapshot's are empty).
