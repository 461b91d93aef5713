(native) => {
  const G = globalThis, dp = Object.defineProperty, gopd = Object.getOwnPropertyDescriptors;
  const now = native.now, timeOrigin = native.timeOrigin, TE = TypeError;

  let making = false;   // programs cannot construct a Performance
  let isPerformance;
  class Performance extends native.EventTarget {
    #brand = true;
    constructor() {
      if (!making) throw new TE("Illegal constructor");
      super();
    }
    static { isPerformance = (v) => typeof v === "object" && v !== null && #brand in v; }
    now() {
      if (!isPerformance(this)) throw new TE("Illegal invocation");
      return now();
    }
    get timeOrigin() {
      if (!isPerformance(this)) throw new TE("Illegal invocation");
      return timeOrigin();
    }
    toJSON() {
      if (!isPerformance(this)) throw new TE("Illegal invocation");
      return { timeOrigin: timeOrigin() };
    }
  }
  for (const [k, d] of Object.entries(gopd(Performance.prototype)))
    if (k !== "constructor") dp(Performance.prototype, k, { ...d, enumerable: true });
  dp(Performance.prototype, Symbol.toStringTag, { value: "Performance", configurable: true });
  making = true;
  let performance;
  try { performance = new Performance(); } finally { making = false; }
  dp(G, "Performance", { value: Performance, writable: true, configurable: true });
  dp(G, "performance", { value: performance, writable: true, configurable: true });
}
// performance (W3C High Resolution Time): now() is the time since the run started, in ms, on
// the host's monotonic clock (100 µs steps), and timeOrigin the run's start in ms since the
// epoch: both come from the run record (web_perf.c), never from when the snapshot was built.
// With deterministic=True the clock is the host's fixed one (+1 ms per read).
