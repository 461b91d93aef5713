(native) => {
  const G = globalThis, dp = Object.defineProperty, apply = Reflect.apply;
  const S = String, N = Number, TE = TypeError, RE = RangeError, E = Error;
  const DOMException = G.DOMException, Event = G.Event, EventTarget = native.EventTarget;
  const fire = native.fire, trustedEvent = native.trustedEvent, idl = native.idl;
  const logError = native.console.error, setTimer = native.setTimer, isFinite = N.isFinite;
  const uncurry = (f) => (self, ...args) => apply(f, self, args);
  const MP = Map.prototype, SP = String.prototype;
  const mapGet = uncurry(MP.get), mapSet = uncurry(MP.set), mapHas = uncurry(MP.has);
  const mapDelete = uncurry(MP.delete), mapClear = uncurry(MP.clear);
  const mapForEach = uncurry(MP.forEach);   // iterates without the program's iterator protocol
  const mapSize = uncurry(Object.getOwnPropertyDescriptor(MP, "size").get);
  const push = uncurry(Array.prototype.push), split = uncurry(SP.split);
  const indexOf = uncurry(SP.indexOf), wellFormed = uncurry(SP.toWellFormed);
  const exec = uncurry(RegExp.prototype.exec), freeze = Object.freeze;
  const object = (v) => (typeof v === "object" && v !== null) || typeof v === "function";
  function need(n, got, what) {
    if (got < n) throw new TE(`${what}: ${n} argument${n > 1 ? "s" : ""} required, but only ${got} present`);
  }
  const illegal = () => new TE("Illegal constructor");

  // ---- the global object is an EventTarget: globalThis -> WorkerGlobalScope.prototype ->
  // EventTarget.prototype; its listeners are events.js's globalListeners
  class WorkerGlobalScope extends EventTarget {
    constructor() { throw illegal(); }
  }
  Object.setPrototypeOf(G, WorkerGlobalScope.prototype);
  idl(WorkerGlobalScope, "WorkerGlobalScope");
  delete G[Symbol.toStringTag];   // QuickJS's own "global": the class string is the interface's
  dp(G, "self", { value: G, writable: true, configurable: true });

  class Navigator {
    constructor() { throw illegal(); }
    get userAgent() { brand(this); return "quickjail"; }
    get hardwareConcurrency() { brand(this); return 1; }
    get language() { brand(this); return "en-US"; }
    get platform() { brand(this); return ""; }
    get languages() { brand(this); return languages; }
  }
  const navigator = Object.create(Navigator.prototype), languages = freeze(["en-US"]);
  function brand(v) { if (v !== navigator) throw new TE("Illegal invocation"); }
  idl(Navigator, "Navigator");
  dp(G, "navigator", { value: navigator, writable: true, configurable: true });

  // ---- ErrorEvent and PromiseRejectionEvent (HTML 8.1.4.7, 8.1.5.7)
  class ErrorEvent extends Event {
    #message; #filename; #lineno; #colno; #error;
    constructor(type, eventInitDict = undefined) {
      need(1, arguments.length, "ErrorEvent constructor");
      super(type, eventInitDict);
      const d = eventInitDict == null ? {} : eventInitDict;
      // a dictionary's members are read in name order
      const colno = d.colno, error = d.error, filename = d.filename, lineno = d.lineno;
      const message = d.message;
      this.#colno = colno === undefined ? 0 : colno >>> 0;
      this.#error = error;
      this.#filename = filename === undefined ? "" : wellFormed(S(filename));
      this.#lineno = lineno === undefined ? 0 : lineno >>> 0;
      this.#message = message === undefined ? "" : S(message);
    }
    get message() { return this.#message; }
    get filename() { return this.#filename; }
    get lineno() { return this.#lineno; }
    get colno() { return this.#colno; }
    get error() { return this.#error; }
  }
  class PromiseRejectionEvent extends Event {
    #promise; #reason;
    constructor(type, eventInitDict) {
      need(2, arguments.length, "PromiseRejectionEvent constructor");
      if (!object(eventInitDict))
        throw new TE("PromiseRejectionEvent constructor: eventInitDict.promise is required");
      super(type, eventInitDict);
      const promise = eventInitDict.promise, reason = eventInitDict.reason;
      if (!object(promise))
        throw new TE("PromiseRejectionEvent constructor: eventInitDict.promise is not an object");
      this.#promise = promise;
      this.#reason = reason;
    }
    get promise() { return this.#promise; }
    get reason() { return this.#reason; }
  }
  idl(ErrorEvent, "ErrorEvent");
  idl(PromiseRejectionEvent, "PromiseRejectionEvent");

  // ---- "report the exception": an "error" ErrorEvent at the global, then, unless a listener
  // cancelled it, an error log. An exception reported while the "error" listeners run (one of
  // them threw) is only logged, so a throwing listener cannot recurse.
  const FRAME = /\(([^()\n]*):(\d+):(\d+)\)$|at ([^()\n]*):(\d+):(\d+)$/;
  function where(stack, skipInternal) {
    const lines = split(stack, "\n");
    for (let i = 0; i < lines.length && i < 64; i++) {
      const m = exec(FRAME, lines[i]);
      if (m === null) continue;
      const file = m[1] === undefined ? m[4] : m[1];
      if (skipInternal && indexOf(file, "<quickjail") === 0) continue;
      return [file, N(m[1] === undefined ? m[5] : m[2]), N(m[1] === undefined ? m[6] : m[3])];
    }
    return null;
  }
  function describe(e, caller) {
    let message = "Uncaught exception", at = null;
    try { message = "Uncaught " + S(e); } catch {}
    try {
      if (e instanceof E) {
        const stack = e.stack;
        if (typeof stack === "string") at = where(stack, false);
      }
    } catch {}
    if (at === null && caller !== undefined) at = caller;
    const init = { __proto__: null, cancelable: true, message, error: e };
    if (at !== null) { init.filename = at[0]; init.lineno = at[1]; init.colno = at[2]; }
    return init;
  }
  let reporting = false;
  function reportException(e, prefix, caller = undefined) {
    let notHandled = true;
    if (!reporting) {
      reporting = true;
      try {
        notHandled = fire(G, trustedEvent(ErrorEvent, "error", describe(e, caller)));
      } finally {
        reporting = false;
      }
    }
    if (notHandled) try { logError(prefix, e); } catch {}
  }
  native.reportException = reportException;

  function reportError(e) {
    need(1, arguments.length, "reportError");
    let caller;
    try { caller = where(S(new E().stack), true) || undefined; } catch {}
    reportException(e, "Uncaught exception (reportError):", caller);
  }
  dp(G, "reportError", { value: reportError, writable: true, enumerable: true, configurable: true });

  // ---- unhandled rejections (HTML 8.1.5.7): rejections.c calls rejAdd/rejDel from the engine's
  // tracker, rejNotify after each microtask checkpoint and rejTake at the end of the run.
  // pending: rejected with no handler, not yet notified (promise -> reason); outstanding:
  // notified and still unhandled (promise -> [reason, log]); `log` is false once a listener
  // cancelled the event. At most MAX_TRACKED at once: past it a rejection is not tracked.
  const MAX_TRACKED = 10000;
  const pending = new Map(), outstanding = new Map();
  let dispatching = null, dispatchHandled = false;
  function rejAdd(p, r) {
    const n = mapSize(pending) + mapSize(outstanding) + (dispatching === null ? 0 : 1);
    if (n < MAX_TRACKED) mapSet(pending, p, r);
  }
  function rejDel(p) {
    if (mapDelete(pending, p)) return;
    if (p === dispatching) { dispatchHandled = true; return; }
    const rec = mapGet(outstanding, p);
    if (rec === undefined) return;
    mapDelete(outstanding, p);
    // handled after its unhandledrejection: a "rejectionhandled" event, as a task
    setTimer(() => { fire(G, rejectionEvent("rejectionhandled", p, rec[0], false)); }, 0);
  }
  const rejectionEvent = (type, promise, reason, cancelable) =>
    trustedEvent(PromiseRejectionEvent, type, { __proto__: null, cancelable, promise, reason });
  // run: the run's own promise; when it is rejected, `reason` is its reason (the run's error,
  // which is reported as the outcome, not as an event)
  function rejNotify(run, rejected, reason) {
    if (mapSize(pending) === 0) return 0;
    const list = [];
    mapForEach(pending, (r, p) => { push(list, p, r); });
    mapClear(pending);
    let fired = 0;
    for (let i = 0; i < list.length; i += 2) {
      const p = list[i], r = list[i + 1];
      if (p === run || (rejected && r === reason)) {
        mapSet(outstanding, p, [r, true]);
        continue;
      }
      dispatching = p;
      dispatchHandled = false;
      let notCanceled;
      try {
        notCanceled = fire(G, rejectionEvent("unhandledrejection", p, r, true));
      } finally {
        dispatching = null;
      }
      fired++;
      if (!dispatchHandled) mapSet(outstanding, p, [r, notCanceled]);
    }
    return fired;
  }
  function rejTake(has, e) {
    const out = [];
    const take = (r, log) => { if (log && !(has && r === e)) push(out, r); };
    mapForEach(outstanding, (rec) => take(rec[0], rec[1]));
    mapForEach(pending, (r) => take(r, true));
    mapClear(outstanding);
    mapClear(pending);
    return out;
  }
  native.helpers({ rejAdd, rejDel, rejNotify, rejTake, reportException });

  // ---- QuotaExceededError (Web IDL 3.14.2), a DOMException with quota and requested
  class QuotaExceededError extends DOMException {
    #quota; #requested;
    constructor(message = "", options = undefined) {
      message = S(message);
      const o = options == null ? {} : options;
      if (!object(o)) throw new TE("QuotaExceededError constructor: options is not an object");
      const q = o.quota, r = o.requested;
      const quota = q === undefined ? null : N(q), requested = r === undefined ? null : N(r);
      for (const v of [quota, requested]) {
        if (v === null) continue;
        if (!isFinite(v)) throw new TE("QuotaExceededError constructor: not a finite number");
        if (v < 0) throw new RE("QuotaExceededError constructor: a negative number");
      }
      if (quota !== null && requested !== null && requested < quota)
        throw new RE("QuotaExceededError constructor: requested is below quota");
      super(message, "QuotaExceededError");
      this.#quota = quota;
      this.#requested = requested;
    }
    get quota() { return this.#quota; }
    get requested() { return this.#requested; }
  }
  idl(QuotaExceededError, "QuotaExceededError");
}
// The global scope as a Worker has it (HTML 8.1 and 10.2): globalThis is a WorkerGlobalScope,
// an EventTarget (addEventListener on globalThis, or bare); self; navigator (userAgent
// "quickjail", hardwareConcurrency 1, language "en-US", platform "" as in workerd);
// reportError; ErrorEvent,
// PromiseRejectionEvent and QuotaExceededError.
// An exception a callback, a job or a listener threw, and reportError's, is "reported":
// an "error" ErrorEvent (cancelable, message "Uncaught ...", filename/lineno/colno from the
// error's first frame) at the global, then an error log unless a listener called
// preventDefault. A rejection still without a handler after a microtask checkpoint fires a
// cancelable "unhandledrejection" at the global (and "rejectionhandled", as a task, once it
// gets one); it is logged at the end of the run if it is still unhandled and no listener
// cancelled its event. Shares: native.reportException(e, logPrefix); hands rejections.c its
// helpers through native.helpers.
