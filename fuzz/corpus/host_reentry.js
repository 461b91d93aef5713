const p = [h.async(1), h.async([2n]), h.promise({a: new Uint8Array(3)})]; setTimeout(() => h.sync("late"), 5); report(await Promise.allSettled(p));
