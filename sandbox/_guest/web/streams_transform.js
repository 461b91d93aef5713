(native) => {
  const S = native.streams, apply = Reflect.apply, TE = TypeError, RE = RangeError;
  const { then, chain, resolved, rejected, deferred, settle, fail, upon, promiseCall, object, dict,
    callback, strategy, extractHighWaterMark, extractSizeAlgorithm, idl, INTERNAL } = S;

  let tsOf, newStream, newController;

  class TransformStream {
    #t;
    constructor(transformer = undefined, writableStrategy = undefined, readableStrategy = undefined) {
      if (transformer === INTERNAL) { this.#t = writableStrategy; writableStrategy.api = this; return; }
      if (transformer === null) throw new TE("TransformStream: transformer is not an object");
      const wst = strategy(writableStrategy, "TransformStream: writableStrategy");
      const rst = strategy(readableStrategy, "TransformStream: readableStrategy");
      const tr = dict(transformer, "TransformStream: transformer");
      const d = tr === undefined ? undefined : {
        __proto__: null,
        cancel: callback(tr, "cancel", "transformer"),
        flush: callback(tr, "flush", "transformer"),
        readableType: tr.readableType,
        start: callback(tr, "start", "transformer"),
        transform: callback(tr, "transform", "transformer"),
        writableType: tr.writableType,
      };
      if (d !== undefined && d.readableType !== undefined) throw new RE("TransformStream: invalid readableType");
      if (d !== undefined && d.writableType !== undefined) throw new RE("TransformStream: invalid writableType");
      const readableHWM = extractHighWaterMark(rst, 0), readableSize = extractSizeAlgorithm(rst);
      const writableHWM = extractHighWaterMark(wst, 1), writableSize = extractSizeAlgorithm(wst);
      const started = deferred();
      S.markOwn(started.p);
      const t = this.#t = initStream(this, started.p, writableHWM, writableSize, readableHWM, readableSize);
      setUpControllerFromTransformer(t, transformer, d);
      if (d !== undefined && d.start !== undefined) settle(started, apply(d.start, transformer, [t.controller.api]));
      else settle(started, undefined);
    }
    get readable() { return this.#t.readable.api; }
    get writable() { return this.#t.writable.api; }
    static {
      tsOf = (x) => (object(x) && #t in x ? x.#t : undefined);
      newStream = (t) => new TransformStream(INTERNAL, t);
    }
  }

  class TransformStreamDefaultController {
    #c;
    constructor() {
      if (arguments[0] !== INTERNAL) throw new TE("Illegal constructor");
      this.#c = arguments[1];
      this.#c.api = this;
    }
    get desiredSize() { return S.desiredSize(this.#c.stream.readable.controller); }
    enqueue(chunk = undefined) { controllerEnqueue(this.#c, chunk); }
    error(reason = undefined) { this.#c; errorStream(this.#c.stream, reason); }
    terminate() { controllerTerminate(this.#c); }
    static { newController = (c) => new TransformStreamDefaultController(INTERNAL, c); }
  }

  // ---- the stream's abstract operations (Streams 6.4) ----
  function initStream(api, startPromise, writableHWM, writableSize, readableHWM, readableSize) {
    const t = {
      __proto__: null, api, readable: undefined, writable: undefined, backpressure: undefined,
      backpressureChange: undefined, controller: undefined,
    };
    const start = () => startPromise;
    t.writable = S.createWritable(start, (chunk) => sinkWrite(t, chunk), () => sinkClose(t),
      (reason) => sinkAbort(t, reason), writableHWM, writableSize);
    t.readable = S.createStream(start, () => sourcePull(t), (reason) => sourceCancel(t, reason),
      readableHWM, readableSize);
    setBackpressure(t, true);
    return t;
  }

  // CreateTransformStream-like, for TextEncoderStream and TextDecoderStream: the algorithms
  // are the platform's own, the strategies the defaults
  function createStream(transform, flush) {
    const started = resolved(undefined);
    S.markOwn(started);
    const t = initStream(undefined, started, 1, () => 1, 0, () => 1);
    newStream(t);
    setUpController(t, transform, flush, () => resolved(undefined));
    return t;
  }

  function errorStream(t, e) {
    S.controllerError(t.readable.controller, e);
    errorWritableAndUnblockWrite(t, e);
  }
  function errorWritableAndUnblockWrite(t, e) {
    clearAlgorithms(t.controller);
    S.errorIfNeeded(t.writable.controller, e);
    unblockWrite(t);
  }
  function unblockWrite(t) {
    if (t.backpressure) setBackpressure(t, false);
  }
  function setBackpressure(t, backpressure) {
    if (t.backpressureChange !== undefined) settle(t.backpressureChange, undefined);
    t.backpressureChange = deferred();
    t.backpressure = backpressure;
  }

  // ---- the default controller (Streams 6.5) ----
  function setUpControllerFromTransformer(t, transformer, d) {
    let c;
    const transform = d && d.transform, flush = d && d.flush, cancel = d && d.cancel;
    setUpController(t,
      transform === undefined
        ? (chunk) => {
            try {
              controllerEnqueue(c, chunk);
            } catch (e) {
              return rejected(e);
            }
            return resolved(undefined);
          }
        : (chunk) => promiseCall(transform, transformer, [chunk, c.api]),
      () => promiseCall(flush, transformer, [c.api]),
      (reason) => promiseCall(cancel, transformer, [reason]),
      (x) => { c = x; });
  }

  function setUpController(t, transform, flush, cancel, got = undefined) {
    const c = {
      __proto__: null, api: undefined, stream: t, transformAlgorithm: transform,
      flushAlgorithm: flush, cancelAlgorithm: cancel, finish: undefined,
    };
    t.controller = c;
    newController(c);
    if (got) got(c);
  }

  function clearAlgorithms(c) {
    c.transformAlgorithm = c.flushAlgorithm = c.cancelAlgorithm = undefined;
  }

  function controllerEnqueue(c, chunk) {
    const t = c.stream, rc = t.readable.controller;
    if (!S.canCloseOrEnqueue(rc)) throw new TE("enqueue: the readable side is closed or errored");
    try {
      S.controllerEnqueue(rc, chunk);
    } catch (e) {
      errorWritableAndUnblockWrite(t, e);
      throw t.readable.storedError;
    }
    const backpressure = S.hasBackpressure(rc);
    if (backpressure !== t.backpressure) setBackpressure(t, true);
  }

  function controllerTerminate(c) {
    const t = c.stream;
    S.controllerClose(t.readable.controller);
    errorWritableAndUnblockWrite(t, new TE("The TransformStream was terminated"));
  }

  function performTransform(c, chunk) {
    return then(c.transformAlgorithm(chunk), undefined, (r) => {
      errorStream(c.stream, r);
      throw r;
    });
  }

  // ---- the algorithms of the two sides ----
  function sinkWrite(t, chunk) {
    const c = t.controller;
    if (t.backpressure) {
      return chain(t.backpressureChange.p, () => {
        const w = t.writable;
        if (w.state === "erroring") throw w.storedError;
        return performTransform(c, chunk);
      });
    }
    return performTransform(c, chunk);
  }

  // the shared shape of sinkAbort, sinkClose and sourceCancel: run the algorithm once, then
  // settle the other side
  function finishWith(c, p, onFulfilled, onRejected) {
    const d = c.finish = deferred();
    clearAlgorithms(c);
    upon(p, () => {
      try {
        onFulfilled(d);
      } catch (e) {
        fail(d, e);
      }
    }, (r) => {
      onRejected(r);
      fail(d, r);
    });
    return d.p;
  }

  function sinkAbort(t, reason) {
    const c = t.controller;
    if (c.finish !== undefined) return c.finish.p;
    const readable = t.readable;
    return finishWith(c, c.cancelAlgorithm(reason), (d) => {
      if (readable.state === "errored") fail(d, readable.storedError);
      else {
        S.controllerError(readable.controller, reason);
        settle(d, undefined);
      }
    }, (r) => S.controllerError(readable.controller, r));
  }

  function sinkClose(t) {
    const c = t.controller;
    if (c.finish !== undefined) return c.finish.p;
    const readable = t.readable;
    return finishWith(c, c.flushAlgorithm(), (d) => {
      if (readable.state === "errored") fail(d, readable.storedError);
      else {
        S.controllerClose(readable.controller);
        settle(d, undefined);
      }
    }, (r) => S.controllerError(readable.controller, r));
  }

  function sourceCancel(t, reason) {
    const c = t.controller;
    if (c.finish !== undefined) return c.finish.p;
    const writable = t.writable;
    return finishWith(c, c.cancelAlgorithm(reason), (d) => {
      if (writable.state === "errored") fail(d, writable.storedError);
      else {
        S.errorIfNeeded(writable.controller, reason);
        unblockWrite(t);
        settle(d, undefined);
      }
    }, (r) => {
      S.errorIfNeeded(writable.controller, r);
      unblockWrite(t);
    });
  }

  function sourcePull(t) {
    setBackpressure(t, false);
    return t.backpressureChange.p;
  }

  idl(TransformStream, "TransformStream");
  idl(TransformStreamDefaultController, "TransformStreamDefaultController");

  S.tsOf = tsOf;
  S.createTransform = createStream;
  S.transformEnqueue = (t, chunk) => controllerEnqueue(t.controller, chunk);
}
// TransformStream and its default controller (WHATWG Streams 6), over the readable and writable
// operations of streams_readable.js and streams_writable.js (the latter sorts after this file:
// both are looked up in native.streams when a stream is made). S.createTransform(transform,
// flush) makes the platform's own transforms (streams_text.js).
