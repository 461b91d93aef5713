(native) => {
  const G = globalThis, dp = Object.defineProperty, gopd = Object.getOwnPropertyDescriptors;
  const TE = TypeError, DOMException = G.DOMException, EventTarget = native.EventTarget;
  const apply = Reflect.apply, push = (a, v) => apply(Array.prototype.push, a, [v]);
  const includes = Array.prototype.includes;
  const trunc = Math.trunc, isFinite = Number.isFinite, MAX = Number.MAX_SAFE_INTEGER;

  function idl(cls, name) {
    for (const obj of [cls, cls.prototype])
      for (const [k, d] of Object.entries(gopd(obj)))
        if (k !== "prototype" && k !== "constructor" && k !== "length" && k !== "name")
          dp(obj, k, { ...d, enumerable: true });
    dp(cls.prototype, Symbol.toStringTag, { value: name, configurable: true });
    dp(G, name, { value: cls, writable: true, configurable: true });
  }

  let isSignal, aborted, onAbort, signalAbort;
  let creating = false;   // new AbortSignal() is refused unless the platform makes one
  function newSignal() {
    creating = true;
    try { return new AbortSignal(); } finally { creating = false; }
  }

  class AbortSignal extends EventTarget {
    #aborted = false; #reason = undefined;
    #steps = [];                                   // abort algorithms, run before the event
    #dependent = false; #sources = []; #dependents = [];
    constructor() {
      if (!creating) throw new TE("Illegal constructor");
      super();
    }
    static abort(reason = undefined) {
      const s = newSignal();
      s.#aborted = true;
      s.#reason = reason === undefined ? abortError() : reason;
      return s;
    }
    static timeout(milliseconds) {
      if (arguments.length < 1) throw new TE("AbortSignal.timeout: 1 argument required");
      const ms = +milliseconds;
      if (!isFinite(ms) || trunc(ms) < 0 || trunc(ms) > MAX)
        throw new TE("AbortSignal.timeout: milliseconds is not a finite, non-negative number");
      const setTimer = native.setTimer;
      if (typeof setTimer !== "function")
        throw new TE("AbortSignal.timeout needs timers, which this build lacks");
      const s = newSignal();
      setTimer(() => {
        signalAbort(s, new DOMException("The operation timed out.", "TimeoutError"));
      }, trunc(ms));
      return s;
    }
    static any(signals) {
      if (arguments.length < 1) throw new TE("AbortSignal.any: 1 argument required");
      if (signals === null || (typeof signals !== "object" && typeof signals !== "function"))
        throw new TE("AbortSignal.any: signals is not a sequence");
      if (typeof signals[Symbol.iterator] !== "function")
        throw new TE("AbortSignal.any: signals is not iterable");
      const list = [];
      for (const s of signals) {
        if (!isSignal(s)) throw new TE("AbortSignal.any: every member must be an AbortSignal");
        push(list, s);
      }
      const result = newSignal();
      for (let i = 0; i < list.length; i++) {
        const s = list[i];
        if (s.#aborted) {
          result.#aborted = true;
          result.#reason = s.#reason;
          return result;
        }
      }
      result.#dependent = true;
      for (let i = 0; i < list.length; i++) {
        const s = list[i], sources = s.#dependent ? s.#sources : [s];
        for (let j = 0; j < sources.length; j++) {
          const src = sources[j];
          if (!apply(includes, result.#sources, [src])) push(result.#sources, src);
          if (!apply(includes, src.#dependents, [result])) push(src.#dependents, result);
        }
      }
      return result;
    }
    get aborted() { return this.#aborted; }
    get reason() { return this.#reason; }
    throwIfAborted() { if (this.#aborted) throw this.#reason; }

    static {
      isSignal = (s) => typeof s === "object" && s !== null && #aborted in s;
      aborted = (s) => s.#aborted;
      onAbort = (s, step) => { if (!s.#aborted) push(s.#steps, step); };
      // DOM "signal abort": the reason, the dependents, then each one's abort steps
      signalAbort = (s, reason) => {
        if (s.#aborted) return;
        s.#aborted = true;
        s.#reason = reason === undefined ? abortError() : reason;
        const dependents = [];
        for (let i = 0; i < s.#dependents.length; i++) {
          const d = s.#dependents[i];
          if (!d.#aborted) {
            d.#aborted = true;
            d.#reason = s.#reason;
            push(dependents, d);
          }
        }
        runSteps(s);
        for (let i = 0; i < dependents.length; i++) runSteps(dependents[i]);
      };
      // DOM "run the abort steps": the algorithms, then the trusted "abort" event
      const runSteps = (s) => {
        const steps = s.#steps;
        s.#steps = [];
        for (let i = 0; i < steps.length; i++) {
          try { steps[i](); } catch (e) { native.reportError(e); }
        }
        native.fire(s, native.event("abort"));
      };
    }
  }
  native.isAbortSignal = isSignal;
  native.signalAborted = aborted;
  native.onAbort = onAbort;
  native.signalAbort = signalAbort;
  native.handlerAttribute(AbortSignal, "abort");

  function abortError() {
    return new DOMException("This operation was aborted", "AbortError");
  }

  class AbortController {
    #signal = newSignal();
    get signal() { return this.#signal; }
    abort(reason = undefined) { signalAbort(this.#signal, reason); }
  }

  idl(AbortSignal, "AbortSignal");
  idl(AbortController, "AbortController");
}
// AbortController and AbortSignal (WHATWG DOM section 3.1). The file sorts after events.js,
// whose EventTarget it extends. Abort algorithms (an addEventListener `signal` removing its
// listener) run before the "abort" event, which is trusted and fired once. AbortSignal.any
// follows the sources of dependent signals, as the spec does; AbortSignal.timeout(ms) sets a
// timer through native.setTimer(callback, ms) (web/timers.js), looked up when it is called.
