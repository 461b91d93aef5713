(native) => {
  const S = native.streams, TE = TypeError;
  const { then, chain, resolved, deferred, settle, fail, upon, dict, noop } = S;

  // ---- pipeTo (ReadableStreamPipeTo) ----
  function pipeOptions(options) {
    const o = dict(options, "pipeTo: options");
    const get = (k) => (o === undefined ? undefined : o[k]);
    const preventAbort = !!get("preventAbort"), preventCancel = !!get("preventCancel");
    const preventClose = !!get("preventClose"), signal = get("signal");
    if (signal !== undefined && !native.isAbortSignal(signal))
      throw new TE("pipeTo: options.signal is not an AbortSignal");
    return { __proto__: null, preventAbort, preventCancel, preventClose, signal };
  }

  function pipeTo(source, dest, preventClose, preventAbort, preventCancel, signal) {
    // the readable and writable operations, from the files that sort after this one
    const W = S, { acquireReader, readerRead, readerRelease, cancelStream } = S;
    const reader = acquireReader(source), writer = W.acquireWriter(dest);
    source.disturbed = true;
    let shuttingDown = false, finalized = false, currentWrite = resolved(undefined);
    const done = deferred();

    const finalize = (isError, error) => {
      finalized = true;
      W.writerRelease(writer);
      readerRelease(reader);
      if (isError) fail(done, error);
      else settle(done, undefined);
    };
    const waitForWrites = () => {
      const old = currentWrite;
      return chain(currentWrite, () => (old !== currentWrite ? waitForWrites() : undefined));
    };
    const destWritable = () => dest.state === "writable" && !W.closeQueuedOrInFlight(dest);
    const shutdownWithAction = (action, isError, originalError) => {
      if (shuttingDown) return;
      shuttingDown = true;
      const rest = () => upon(action(), () => finalize(isError, originalError), (e) => finalize(true, e));
      if (destWritable()) upon(waitForWrites(), rest);
      else rest();
    };
    const shutdown = (isError, error) => {
      if (shuttingDown) return;
      shuttingDown = true;
      if (destWritable()) upon(waitForWrites(), () => finalize(isError, error));
      else finalize(isError, error);
    };

    if (signal !== undefined) {
      const abort = () => {
        if (finalized) return;
        const error = signal.reason, actions = [];
        if (!preventAbort)
          actions[actions.length] = () => (dest.state === "writable" ? W.abortStream(dest, error) : resolved(undefined));
        if (!preventCancel)
          actions[actions.length] = () => (source.state === "readable" ? cancelStream(source, error) : resolved(undefined));
        shutdownWithAction(() => {
          const ps = [];
          for (let i = 0; i < actions.length; i++) ps[i] = actions[i]();
          return S.all(ps);
        }, true, error);
      };
      if (native.signalAborted(signal)) {
        abort();
        return done.p;
      }
      native.onAbort(signal, abort);
    }

    // errors must be propagated forward and backward, closing forward, closing backward
    const sourceErrored = (e) => {
      if (!preventAbort) shutdownWithAction(() => W.abortStream(dest, e), true, e);
      else shutdown(true, e);
    };
    const destErrored = (e) => {
      if (!preventCancel) shutdownWithAction(() => cancelStream(source, e), true, e);
      else shutdown(true, e);
    };
    if (source.state === "errored") sourceErrored(source.storedError);
    else upon(reader.closed.p, undefined, sourceErrored);
    if (dest.state === "errored") destErrored(dest.storedError);
    else upon(writer.closed.p, undefined, destErrored);
    const sourceClosed = () => {
      if (!preventClose) shutdownWithAction(() => W.writerCloseWithErrorPropagation(writer));
      else shutdown();
    };
    if (source.state === "closed") sourceClosed();
    else upon(reader.closed.p, sourceClosed);
    if (W.closeQueuedOrInFlight(dest) || dest.state === "closed") {
      const destClosed = new TE("The destination stream is closed");
      if (!preventCancel) shutdownWithAction(() => cancelStream(source, destClosed), true, destClosed);
      else shutdown(true, destClosed);
    }

    const step = () => {
      if (shuttingDown) return resolved(true);
      return chain(writer.ready.p, () => {
        const d = deferred();
        readerRead(reader, {
          __proto__: null,
          // the write waits a microtask: an enqueue() that fulfils this read does not run
          // the sink's write() inside itself
          chunk: (chunk) => {
            currentWrite = then(chain(resolved(undefined), () => W.writerWrite(writer, chunk)), undefined, noop);
            settle(d, false);
          },
          close: () => settle(d, true),
          error: (e) => fail(d, e),
        });
        return d.p;
      });
    };
    const loop = (stop) => { if (!stop) upon(step(), loop, noop); };
    loop(false);
    return done.p;
  }

  S.pipeOptions = pipeOptions;
  S.pipeTo = pipeTo;
}
// ReadableStreamPipeTo (WHATWG Streams 4.9.5) for pipeTo and pipeThrough: errors travel forward
// and backward, closing forward and backward, and an AbortSignal aborts and cancels with its
// reason; the shutdown waits for the writes already started. Uses the readable and writable
// operations in native.streams (streams_readable.js, streams_writable.js), when it is called.
