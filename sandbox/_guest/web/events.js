(native) => {
  const G = globalThis, dp = Object.defineProperty, gopd = Object.getOwnPropertyDescriptors;
  const apply = Reflect.apply, AP = Array.prototype;
  const uncurry = (f) => (self, ...args) => apply(f, self, args);
  const push = uncurry(AP.push), splice = uncurry(AP.splice), indexOf = uncurry(AP.indexOf);
  const slice = uncurry(AP.slice);
  const S = String, B = Boolean, TE = TypeError, DOMException = G.DOMException;
  const now = native.now, logError = native.console.error;

  // Web IDL: operations and attributes are enumerable; the class string is the interface's
  function idl(cls, name) {
    for (const obj of [cls, cls.prototype])
      for (const [k, d] of Object.entries(gopd(obj)))
        if (k !== "prototype" && k !== "constructor" && k !== "length" && k !== "name")
          dp(obj, k, { ...d, enumerable: true });
    dp(cls.prototype, Symbol.toStringTag, { value: name, configurable: true });
    dp(G, name, { value: cls, writable: true, configurable: true });
  }
  const object = (v) => (typeof v === "object" && v !== null) || typeof v === "function";
  function need(n, got, what) {
    if (got < n) throw new TE(`${what}: ${n} argument${n > 1 ? "s" : ""} required, but only ${got} present`);
  }
  // an exception thrown by a listener is reported and the dispatch carries on (DOM "report
  // the exception"): an "error" event at the global scope (global.js, read at call time),
  // then, unless a listener cancelled it, an error log, as for queueMicrotask callbacks
  function report(e) {
    const r = native.reportException;
    if (r) return r(e, "Uncaught exception in an event listener:");
    try { logError("Uncaught exception in an event listener:", e); } catch {}
  }
  native.reportError = report;

  const NONE = 0, CAPTURING_PHASE = 1, AT_TARGET = 2, BUBBLING_PHASE = 3;
  const phases = { NONE, CAPTURING_PHASE, AT_TARGET, BUBBLING_PHASE };
  let trusted = false;   // set while native.event makes an event the platform fires
  let isEvent, trustedOf, dispatch, listenersOf;   // set by the classes' static blocks

  class Event {
    #type; #target = null; #current = null; #phase = NONE;
    #bubbles; #cancelable; #composed; #trusted; #time;
    #stop = false; #stopNow = false; #canceled = false; #passive = false;
    #dispatching = false; #initialized = true;
    constructor(type, eventInitDict = undefined) {
      need(1, arguments.length, "Event constructor");
      this.#type = S(type);
      const d = eventInitDict == null ? {} : eventInitDict;
      if (!object(d)) throw new TE("Event constructor: eventInitDict is not an object");
      this.#bubbles = B(d.bubbles);
      this.#cancelable = B(d.cancelable);
      this.#composed = B(d.composed);
      this.#trusted = trusted;
      this.#time = now();
      dp(this, "isTrusted", { get: isTrusted, enumerable: true, configurable: false });
    }
    get type() { return this.#type; }
    get target() { return this.#target; }
    get srcElement() { return this.#target; }
    get currentTarget() { return this.#current; }
    composedPath() { return this.#current === null ? [] : [this.#current]; }
    get eventPhase() { return this.#phase; }
    stopPropagation() { this.#stop = true; }
    get cancelBubble() { return this.#stop; }
    set cancelBubble(v) { if (v) this.#stop = true; }
    stopImmediatePropagation() { this.#stop = this.#stopNow = true; }
    get bubbles() { return this.#bubbles; }
    get cancelable() { return this.#cancelable; }
    get returnValue() { return !this.#canceled; }
    set returnValue(v) { if (!v) this.#cancel(); }
    preventDefault() { this.#cancel(); }
    get defaultPrevented() { return this.#canceled; }
    get composed() { return this.#composed; }
    get timeStamp() { return this.#time; }
    initEvent(type, bubbles = false, cancelable = false) {
      need(1, arguments.length, "initEvent");
      if (this.#dispatching) return;
      this.#initialized = true;
      this.#stop = this.#stopNow = this.#canceled = false;
      this.#target = null;
      this.#type = S(type);
      this.#bubbles = B(bubbles);
      this.#cancelable = B(cancelable);
    }
    #cancel() { if (this.#cancelable && !this.#passive) this.#canceled = true; }

    static {
      isEvent = (e) => object(e) && #type in e;
      trustedOf = (e) => e.#trusted;
      // DOM "dispatch", for a target with no parent: capture listeners, then the others
      dispatch = (e, target, listeners) => {
        if (e.#dispatching || !e.#initialized)
          throw new DOMException("The event is already being dispatched", "InvalidStateError");
        e.#dispatching = true;
        e.#target = e.#current = target;
        e.#phase = AT_TARGET;
        try {
          for (let pass = 0; pass < 2 && !e.#stop; pass++) {
            const capturing = pass === 0, clone = slice(listeners);
            for (let i = 0; i < clone.length; i++) {
              const l = clone[i];
              if (l.removed || l.type !== e.#type || l.capture !== capturing) continue;
              if (l.once) remove(listeners, l);
              e.#passive = l.passive;
              call(l.callback, target, e);
              e.#passive = false;
              if (e.#stopNow) break;
            }
          }
        } finally {
          e.#phase = NONE;
          e.#current = null;
          e.#dispatching = e.#stop = e.#stopNow = false;
        }
        return !e.#canceled;
      };
    }
  }
  function remove(listeners, l) {
    l.removed = true;
    const i = indexOf(listeners, l);
    if (i >= 0) splice(listeners, i, 1);
  }
  const isTrusted = dp(function () { return trustedOf(this); }, "name", { value: "get isTrusted" });
  for (const [k, v] of Object.entries(phases)) {
    dp(Event, k, { value: v, enumerable: true });
    dp(Event.prototype, k, { value: v, enumerable: true });
  }

  function call(callback, target, e) {
    try {
      if (typeof callback === "function") return apply(callback, target, [e]);
      const handle = callback.handleEvent;
      if (typeof handle !== "function") throw new TE("handleEvent is not a function");
      apply(handle, callback, [e]);
    } catch (err) {
      report(err);
    }
  }

  class CustomEvent extends Event {
    #detail;
    constructor(type, eventInitDict = undefined) {
      need(1, arguments.length, "CustomEvent constructor");
      super(type, eventInitDict);
      const d = eventInitDict == null ? {} : eventInitDict;
      this.#detail = d.detail === undefined ? null : d.detail;
    }
    get detail() { return this.#detail; }
    initCustomEvent(type, bubbles = false, cancelable = false, detail = null) {
      need(1, arguments.length, "initCustomEvent");
      this.initEvent(type, bubbles, cancelable);
      this.#detail = detail;
    }
  }

  function find(list, type, callback, capture) {
    for (let i = 0; i < list.length; i++) {
      const l = list[i];
      if (l.type === type && l.callback === callback && l.capture === capture) return l;
    }
  }

  function flatten(options) {
    return typeof options === "boolean" ? options : object(options) ? B(options.capture) : B(options);
  }

  // the global object is an EventTarget too (global.js puts EventTarget.prototype on its
  // chain), but no constructor ran on it: its listeners live here
  const globalListeners = [];
  class EventTarget {
    #listeners = [];
    addEventListener(type, callback, options = undefined) {
      const list = listenersOf(this);
      need(2, arguments.length, "addEventListener");
      type = S(type);
      if (callback != null && !object(callback))
        throw new TE("addEventListener: the listener is not an object or a function");
      const capture = flatten(options);
      let once = false, passive = false, signal = null;
      if (object(options)) {
        once = B(options.once);
        passive = B(options.passive);
        const s = options.signal;
        if (s !== undefined) {
          if (!native.isAbortSignal(s))
            throw new TE("addEventListener: options.signal is not an AbortSignal");
          signal = s;
        }
      }
      if (signal !== null && native.signalAborted(signal)) return;
      if (callback == null) return;
      if (find(list, type, callback, capture)) return;
      const l = { type, callback, capture, once, passive, removed: false };
      push(list, l);
      if (signal !== null) native.onAbort(signal, () => remove(list, l));
    }
    removeEventListener(type, callback, options = undefined) {
      const list = listenersOf(this);
      need(2, arguments.length, "removeEventListener");
      type = S(type);
      if (callback != null && !object(callback))
        throw new TE("removeEventListener: the listener is not an object or a function");
      const capture = flatten(options);
      const l = find(list, type, callback, capture);
      if (l) remove(list, l);
    }
    dispatchEvent(event) {
      listenersOf(this);
      need(1, arguments.length, "dispatchEvent");
      if (!isEvent(event))
        throw new TE("dispatchEvent: the argument is not an Event");
      return fire(this == null ? G : this, event);
    }
    // Web IDL: an operation called with this undefined or null acts on the global object
    // (so a bare addEventListener(...) works)
    static { listenersOf = (t) => (t === G || t == null ? globalListeners : t.#listeners); }
  }
  function fire(target, event) {
    return dispatch(event, target, listenersOf(target));
  }

  // for the platform's own events (AbortSignal's "abort"): isTrusted is true, and the
  // dispatch goes through the captured algorithm, whatever the program redefined
  native.event = (type) => {
    trusted = true;
    try { return new Event(type); } finally { trusted = false; }
  };
  // the same for an Event subclass (ErrorEvent, PromiseRejectionEvent): `init` is the
  // caller's own dictionary, so no program code runs while `trusted` is set
  native.trustedEvent = (cls, type, init) => {
    trusted = true;
    try { return new cls(type, init); } finally { trusted = false; }
  };
  native.fire = fire;
  // an event handler IDL attribute (onabort): one listener, added at the first non-null value
  native.handlerAttribute = (cls, type) => {
    const slot = new WeakMap();
    dp(cls.prototype, "on" + type, {
      get() { listenersOf(this); const h = slot.get(this); return h ? h.value : null; },
      set(v) {
        const list = listenersOf(this);
        v = object(v) ? v : null;
        let h = slot.get(this);
        if (v === null) {
          if (h) { remove(list, h.listener); slot.delete(this); }
          return;
        }
        if (h) { h.value = v; return; }
        const target = this;
        h = { value: v, listener: null };
        const callback = function (e) {
          const fn = h.value;
          if (typeof fn !== "function") return;
          if (apply(fn, target, [e]) === false) e.preventDefault();
        };
        h.listener = { type, callback, capture: false, once: false, passive: false, removed: false };
        push(list, h.listener);
        slot.set(this, h);
      },
      enumerable: true, configurable: true,
    });
  };
  native.EventTarget = EventTarget;
  native.idl = idl;

  idl(Event, "Event");
  idl(CustomEvent, "CustomEvent");
  idl(EventTarget, "EventTarget");
}
// Event, CustomEvent and EventTarget (WHATWG DOM sections 2.2-2.9) for targets with no tree:
// a dispatch runs the target's capture listeners, then its others (eventPhase AT_TARGET), and
// bubbles/composed are only flags. A listener that throws is reported as an error log
// ("Uncaught exception in an event listener:", through native.reportException when global.js
// set it) and the other listeners still run. The global object's listeners are kept here.
// Shares with later files: native.event(type) (a trusted Event), native.trustedEvent(class,
// type, init), native.fire(target, event),
// native.handlerAttribute(class, type), native.EventTarget, native.idl(class, name) (the Web IDL
// shape and the global), native.reportError; uses at call
// time native.isAbortSignal, native.signalAborted and native.onAbort (events_abort.js).
