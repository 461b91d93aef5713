(native) => {
  // HTML timers over the C timer table (timers.c): ids are positive integers shared by
  // setTimeout and setInterval, a timeout is converted as a WebIDL long and clamped to >= 0,
  // extra arguments are passed to the handler, clearing an unknown id does nothing, and a
  // string handler is compiled only when the run allows dynamic code.
  const set = native.setTimeout, clear = native.clearTimeout;
  const timers = {
    setTimeout(handler, timeout = 0, ...args) { return set(handler, timeout, false, args); },
    setInterval(handler, timeout = 0, ...args) { return set(handler, timeout, true, args); },
    clearTimeout(id = 0) { clear(id); },
    clearInterval(id = 0) { clear(id); },
  };
  for (const name of ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval']) {
    Object.defineProperty(globalThis, name, { value: timers[name], writable: true, configurable: true });
  }
}
// Notes below the code, so editing them moves no frame's line. native.setTimer(callback, ms)
// and native.clearTimer(id) are the internal timers of other web globals (AbortSignal.timeout):
// their ids live apart from these, so neither clearTimeout nor a program replacing these
// globals reaches them. What happens at the end of a run: README "Timers".
