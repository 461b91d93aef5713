(native) => {
  const S = native.streams;
  const { resolved, deferred, settle, follow, upon, noop } = S;
  const { acquireReader, readerRead, readerRelease, cancelStream, createStream, microtask,
    controllerEnqueue, controllerClose, controllerError } = S;
  const B = S.bytes, U8 = Uint8Array, { viewOf, cloneBuffer, respond, respondWithNewView,
    getBYOBRequest, byobRead, createByteStream } = B;

  // ---- tee (ReadableStreamDefaultTee) ----
  function tee(s) {
    const r = acquireReader(s);
    let reading = false, readAgain = false, canceled1 = false, canceled2 = false;
    let reason1, reason2, branch1, branch2;
    const cancelled = deferred();
    const pull = () => {
      if (reading) { readAgain = true; return resolved(undefined); }
      reading = true;
      readerRead(r, {
        __proto__: null,
        chunk: (chunk) => microtask(() => {
          readAgain = false;
          if (!canceled1) controllerEnqueue(branch1.controller, chunk);
          if (!canceled2) controllerEnqueue(branch2.controller, chunk);
          reading = false;
          if (readAgain) pull();
        }),
        close: () => {
          reading = false;
          if (!canceled1) controllerClose(branch1.controller);
          if (!canceled2) controllerClose(branch2.controller);
          if (!canceled1 || !canceled2) settle(cancelled, undefined);
        },
        error: () => { reading = false; },
      });
      return resolved(undefined);
    };
    const cancel1 = (reason) => {
      canceled1 = true;
      reason1 = reason;
      if (canceled2) follow(cancelled, cancelStream(s, [reason1, reason2]));
      return cancelled.p;
    };
    const cancel2 = (reason) => {
      canceled2 = true;
      reason2 = reason;
      if (canceled1) follow(cancelled, cancelStream(s, [reason1, reason2]));
      return cancelled.p;
    };
    branch1 = createStream(noop, pull, cancel1);
    branch2 = createStream(noop, pull, cancel2);
    upon(r.closed.p, undefined, (e) => {
      controllerError(branch1.controller, e);
      controllerError(branch2.controller, e);
      if (!canceled1 || !canceled2) settle(cancelled, undefined);
    });
    return [branch1, branch2];
  }

  // ---- ReadableByteStreamTee ----
  function byteTee(s) {
    let reader = acquireReader(s);
    let reading = false, readAgain1 = false, readAgain2 = false, canceled1 = false, canceled2 = false;
    let reason1, reason2, branch1, branch2;
    const cancelled = deferred();
    const errorBoth = (e) => {
      B.controllerError(branch1.controller, e);
      B.controllerError(branch2.controller, e);
    };
    const forwardReaderError = (r) => {
      upon(r.closed.p, undefined, (e) => {
        if (r !== reader) return;
        errorBoth(e);
        if (!canceled1 || !canceled2) settle(cancelled, undefined);
      });
    };
    const cloneFailed = (e) => {
      errorBoth(e);
      follow(cancelled, S.cancelStream(s, e));
    };
    const pullAgain = () => {
      if (readAgain1) pull1();
      else if (readAgain2) pull2();
    };
    const pullWithDefaultReader = () => {
      if (reader.byob) {
        S.readerRelease(reader);
        reader = S.acquireReader(s);
        forwardReaderError(reader);
      }
      S.readerRead(reader, {
        __proto__: null,
        chunk: (chunk) => S.microtask(() => {
          readAgain1 = readAgain2 = false;
          let chunk2 = chunk;
          if (!canceled1 && !canceled2) {
            try {
              const v = viewOf(chunk);
              chunk2 = new U8(cloneBuffer(v.buffer, v.byteOffset, v.byteLength));
            } catch (e) {
              cloneFailed(e);
              return;
            }
          }
          if (!canceled1) B.controllerEnqueue(branch1.controller, viewOf(chunk));
          if (!canceled2) B.controllerEnqueue(branch2.controller, viewOf(chunk2));
          reading = false;
          pullAgain();
        }),
        close: () => {
          reading = false;
          if (!canceled1) B.controllerClose(branch1.controller);
          if (!canceled2) B.controllerClose(branch2.controller);
          if (branch1.controller.pendingPullIntos.length) respond(branch1.controller, 0);
          if (branch2.controller.pendingPullIntos.length) respond(branch2.controller, 0);
          if (!canceled1 || !canceled2) settle(cancelled, undefined);
        },
        error: () => { reading = false; },
      });
    };
    const pullWithBYOBReader = (view, forBranch2) => {
      if (!reader.byob) {
        S.readerRelease(reader);
        reader = S.acquireBYOBReader(s);
        forwardReaderError(reader);
      }
      const byobBranch = forBranch2 ? branch2 : branch1, otherBranch = forBranch2 ? branch1 : branch2;
      byobRead(reader, viewOf(view), 1, {
        __proto__: null,
        chunk: (chunk) => S.microtask(() => {
          readAgain1 = readAgain2 = false;
          const byobCanceled = forBranch2 ? canceled2 : canceled1;
          const otherCanceled = forBranch2 ? canceled1 : canceled2;
          if (!otherCanceled) {
            let clone;
            try {
              const v = viewOf(chunk);
              clone = new U8(cloneBuffer(v.buffer, v.byteOffset, v.byteLength));
            } catch (e) {
              cloneFailed(e);
              return;
            }
            if (!byobCanceled) respondWithNewView(byobBranch.controller, viewOf(chunk));
            B.controllerEnqueue(otherBranch.controller, viewOf(clone));
          } else if (!byobCanceled) respondWithNewView(byobBranch.controller, viewOf(chunk));
          reading = false;
          pullAgain();
        }),
        close: (chunk) => {
          reading = false;
          const byobCanceled = forBranch2 ? canceled2 : canceled1;
          const otherCanceled = forBranch2 ? canceled1 : canceled2;
          if (!byobCanceled) B.controllerClose(byobBranch.controller);
          if (!otherCanceled) B.controllerClose(otherBranch.controller);
          if (chunk !== undefined) {
            if (!byobCanceled) respondWithNewView(byobBranch.controller, viewOf(chunk));
            if (!otherCanceled && otherBranch.controller.pendingPullIntos.length)
              respond(otherBranch.controller, 0);
          }
          if (!byobCanceled || !otherCanceled) settle(cancelled, undefined);
        },
        error: () => { reading = false; },
      });
    };
    const pullBranch = (forBranch2) => {
      if (reading) {
        if (forBranch2) readAgain2 = true;
        else readAgain1 = true;
        return resolved(undefined);
      }
      reading = true;
      const request = getBYOBRequest((forBranch2 ? branch2 : branch1).controller);
      if (request === null) pullWithDefaultReader();
      else pullWithBYOBReader(request.view, forBranch2);
      return resolved(undefined);
    };
    const pull1 = () => pullBranch(false), pull2 = () => pullBranch(true);
    const cancel1 = (reason) => {
      canceled1 = true;
      reason1 = reason;
      if (canceled2) follow(cancelled, S.cancelStream(s, [reason1, reason2]));
      return cancelled.p;
    };
    const cancel2 = (reason) => {
      canceled2 = true;
      reason2 = reason;
      if (canceled1) follow(cancelled, S.cancelStream(s, [reason1, reason2]));
      return cancelled.p;
    };
    branch1 = createByteStream(noop, pull1, cancel1);
    branch2 = createByteStream(noop, pull2, cancel2);
    forwardReaderError(reader);
    return [branch1, branch2];
  }

  S.tee = tee;
  S.byteTee = byteTee;
}
// ReadableStreamDefaultTee and ReadableByteStreamTee (WHATWG Streams 4.9.1): both branches get
// every chunk (a byte stream's second branch a copy), and the source is cancelled once both
// branches are, with both reasons.
