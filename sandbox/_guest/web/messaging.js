(native) => {
  const G = globalThis, dp = Object.defineProperty, gopd = Object.getOwnPropertyDescriptor;
  const apply = Reflect.apply, S = String, TE = TypeError, freeze = Object.freeze;
  const Event = G.Event, EventTarget = native.EventTarget, clone = G.structuredClone;
  const fire = native.fire, trustedEvent = native.trustedEvent, idl = native.idl;
  const setTimer = native.setTimer;
  const pushF = Array.prototype.push, push = (a, v) => apply(pushF, a, [v]);
  const object = (v) => (typeof v === "object" && v !== null) || typeof v === "function";
  function need(n, got, what) {
    if (got < n) throw new TE(`${what}: ${n} argument${n > 1 ? "s" : ""} required, but only ${got} present`);
  }
  const KEY = {};   // only this file constructs ports
  const NO_PORTS = freeze([]);

  // HTML 9.3.1: MessageEvent (data, origin, lastEventId, source, ports)
  class MessageEvent extends Event {
    #data; #origin; #lastEventId; #source; #ports;
    constructor(type, eventInitDict = undefined) {
      need(1, arguments.length, "MessageEvent constructor");
      super(type, eventInitDict);
      const d = eventInitDict == null ? {} : eventInitDict;
      // a dictionary's members are read in name order
      const data = d.data, lastEventId = d.lastEventId, origin = d.origin, ports = d.ports;
      const source = d.source;
      this.#data = data === undefined ? null : data;
      this.#lastEventId = lastEventId === undefined ? "" : S(lastEventId);
      this.#origin = origin === undefined ? "" : S(origin);
      if (ports === undefined) {
        this.#ports = NO_PORTS;
      } else {
        if (!object(ports)) throw new TE("MessageEvent constructor: ports is not a sequence");
        const list = [];
        for (const p of ports) {
          if (!isPort(p)) throw new TE("MessageEvent constructor: ports holds a non-MessagePort");
          push(list, p);
        }
        this.#ports = freeze(list);
      }
      if (source != null && !isPort(source))
        throw new TE("MessageEvent constructor: source is not a MessagePort");
      this.#source = source === undefined ? null : source;
    }
    get data() { return this.#data; }
    get origin() { return this.#origin; }
    get lastEventId() { return this.#lastEventId; }
    get source() { return this.#source; }
    get ports() { return this.#ports; }
  }

  // HTML 9.4: two entangled ports; a message is cloned when posted (structuredClone, its
  // ArrayBuffers transferable) and delivered to the other port as a task, one per message,
  // once that port is started (start(), or setting onmessage). close() disentangles both.
  let isPort, schedule, startPort, pair;
  class MessagePort extends EventTarget {
    // the port message queue, a linked list: { data, next }
    #other = null; #head = null; #tail = null;
    #started = false; #closed = false; #scheduled = false;
    constructor(...args) {
      if (args[0] !== KEY) throw new TE("Illegal constructor");
      super();
    }
    postMessage(message, options = undefined) {
      this.#closed;
      need(1, arguments.length, "postMessage");
      // postMessage(message, transfer) or postMessage(message, { transfer })
      const opts = object(options) && typeof options[Symbol.iterator] === "function"
        ? { transfer: options } : options;
      const data = clone(message, opts);
      const target = this.#other;
      if (target === null) return;
      const node = { data, next: null };
      if (target.#tail === null) target.#head = node;
      else target.#tail.next = node;
      target.#tail = node;
      schedule(target);
    }
    start() { startPort(this); }
    // messages already posted to either port are still delivered (they are tasks by then)
    close() {
      this.#closed = true;
      const other = this.#other;
      if (other !== null) other.#other = null;
      this.#other = null;
    }
    static {
      isPort = (v) => object(v) && #closed in v;
      const deliver = (port) => {
        port.#scheduled = false;
        const node = port.#head;
        if (node === null) return;
        port.#head = node.next;
        if (port.#head === null) port.#tail = null;
        schedule(port);
        fire(port, trustedEvent(MessageEvent, "message", { __proto__: null, data: node.data }));
      };
      schedule = (port) => {
        if (!port.#started || port.#scheduled || port.#head === null) return;
        port.#scheduled = true;
        setTimer(() => deliver(port), 0);
      };
      startPort = (port) => {
        if (port.#started) return;
        port.#started = true;
        schedule(port);
      };
      pair = () => {
        const a = new MessagePort(KEY), b = new MessagePort(KEY);
        a.#other = b;
        b.#other = a;
        return [a, b];
      };
    }
  }
  native.handlerAttribute(MessagePort, "message");
  native.handlerAttribute(MessagePort, "messageerror");
  {
    // setting onmessage starts the port (HTML 9.4.4)
    const d = gopd(MessagePort.prototype, "onmessage"), set = d.set;
    d.set = dp(function (v) { apply(set, this, [v]); if (object(v)) startPort(this); }, "name",
      { value: "set onmessage" });
    dp(MessagePort.prototype, "onmessage", d);
  }
  // so does a "message" listener, as in a Worker and in Node (HTML asks for start() then)
  const add = EventTarget.prototype.addEventListener;
  const addEventListener = {
    addEventListener(type, callback, options = undefined) {
      if (!isPort(this)) throw new TE("addEventListener: this is not a MessagePort");
      need(2, arguments.length, "addEventListener");
      type = S(type);
      apply(add, this, [type, callback, options]);
      if (type === "message" && callback != null) startPort(this);
    },
  }.addEventListener;
  dp(MessagePort.prototype, "addEventListener",
    { value: addEventListener, writable: true, enumerable: true, configurable: true });

  class MessageChannel {
    #port1; #port2;
    constructor() {
      const [a, b] = pair();
      this.#port1 = a;
      this.#port2 = b;
    }
    get port1() { return this.#port1; }
    get port2() { return this.#port2; }
  }
  idl(MessageEvent, "MessageEvent");
  idl(MessagePort, "MessagePort");
  idl(MessageChannel, "MessageChannel");
}
// MessageChannel, MessagePort and MessageEvent (HTML 9.3-9.4) within one run: a message is
// cloned with structuredClone when posted (a second argument is the transfer list, or
// { transfer }: ArrayBuffers only; a port cannot be transferred, a DataCloneError) and
// delivered to the entangled port as a task on the run's internal timers, one message per task,
// in order, once that port is started (start(), setting onmessage, or, as a Worker and Node
// do, a "message" listener). close() disentangles both ports: later posts are dropped; what was
// posted before is delivered. Like any task, pending deliveries end when the run's entry
// settles.
