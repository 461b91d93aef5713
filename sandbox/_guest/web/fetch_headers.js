// Headers (WHATWG Fetch), as a Worker has it: no forbidden header names (no "request" or
// "response" guard), only "immutable" for the headers of Response.error(), Response.redirect()
// and a fetched response. Names are kept lowercased; iteration sorts and combines (", "),
// except Set-Cookie, whose values stay apart (getSetCookie()).
(native) => {
  const TE = TypeError;
  const apply = Reflect.apply, ownKeys = Reflect.ownKeys, gopd = Reflect.getOwnPropertyDescriptor;
  const iterSym = Symbol.iterator, reTest = RegExp.prototype.test;
  const strToLower = String.prototype.toLowerCase, strReplace = String.prototype.replace;
  const arraySort = Array.prototype.sort;
  const object = (v) => v !== null && (typeof v === "object" || typeof v === "function");
  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  const test = (re, s) => apply(reTest, re, [s]);
  const lower = (s) => apply(strToLower, s, []);

  // ByteString: every code unit must fit in a byte
  const byteString = (v, what) => {
    const s = `${v}`;
    if (test(/[^\0-\xff]/, s)) throw new TE(`${what}: ${JSON.stringify(s.slice(0, 100))} is not a ByteString`);
    return s;
  };
  const checkName = (v, what) => {
    const s = byteString(v, what);
    if (!test(TOKEN, s)) throw new TE(`${what}: invalid header name ${JSON.stringify(s.slice(0, 100))}`);
    return lower(s);
  };
  // normalize (strip leading and trailing HTTP whitespace), then refuse NUL, CR and LF
  const checkValue = (v, what) => {
    const s = apply(strReplace, byteString(v, what), [/^[\t\n\r ]+|[\t\n\r ]+$/g, ""]);
    if (test(/[\0\r\n]/, s)) throw new TE(`${what}: invalid header value ${JSON.stringify(s.slice(0, 100))}`);
    return s;
  };

  let listOf, guardOf, setGuard, isHeaders, sortedOf, append;
  class Headers {
    #list = [];            // [lowercased name, value] in insertion order
    #guard = "none";
    #sorted = null;        // the sorted and combined list, until the next change
    static {
      listOf = (h) => h.#list;
      guardOf = (h) => h.#guard;
      setGuard = (h, g) => (h.#guard = g);
      isHeaders = (h) => object(h) && #list in h;
      sortedOf = (h) => {
        if (!(object(h) && #list in h)) throw new TE("'this' is not a Headers");
        if (h.#sorted === null) h.#sorted = sortAndCombine(h.#list);
        return h.#sorted;
      };
    }
    constructor(init = undefined) {
      if (init !== undefined) fill(this, init, "Headers");
    }
    append(name, value) {
      need(2, arguments.length, "Headers.append");
      append(this, name, value, "Headers.append");
    }
    delete(name) {
      need(1, arguments.length, "Headers.delete");
      const n = checkName(name, "Headers.delete");
      this.#mutable("delete");
      const list = this.#list;
      let j = 0;
      for (let i = 0; i < list.length; i++) if (list[i][0] !== n) list[j++] = list[i];
      if (j !== list.length) this.#sorted = null;
      list.length = j;
    }
    get(name) {
      need(1, arguments.length, "Headers.get");
      return get(this.#list, checkName(name, "Headers.get"));
    }
    getSetCookie() {
      const list = this.#list, out = [];
      for (let i = 0; i < list.length; i++) if (list[i][0] === "set-cookie") out[out.length] = list[i][1];
      return out;
    }
    has(name) {
      need(1, arguments.length, "Headers.has");
      const n = checkName(name, "Headers.has"), list = this.#list;
      for (let i = 0; i < list.length; i++) if (list[i][0] === n) return true;
      return false;
    }
    set(name, value) {
      need(2, arguments.length, "Headers.set");
      const n = checkName(name, "Headers.set"), v = checkValue(value, "Headers.set");
      this.#mutable("set");
      const list = this.#list;
      let j = 0, found = false;
      for (let i = 0; i < list.length; i++) {
        if (list[i][0] !== n) list[j++] = list[i];
        else if (!found) {
          found = true;
          list[j++] = [n, v];
        }
      }
      list.length = j;
      if (!found) list[list.length] = [n, v];
      this.#sorted = null;
    }
    #mutable(what) {
      if (this.#guard === "immutable") throw new TE(`Headers.${what}: these headers are immutable`);
    }
    static {
      append = (h, name, value, what) => {
        const n = checkName(name, what), v = checkValue(value, what);
        h.#mutable(what.slice(8));
        h.#list[h.#list.length] = [n, v];
        h.#sorted = null;
      };
    }
  }

  function need(n, got, what) {
    if (got < n) throw new TE(`${what}: ${n} argument${n > 1 ? "s" : ""} required, but only ${got} present.`);
  }
  const get = (list, n) => {
    let out = null;
    for (let i = 0; i < list.length; i++) if (list[i][0] === n) out = out === null ? list[i][1] : `${out}, ${list[i][1]}`;
    return out;
  };
  // by name, then by position: Set-Cookie values (and combined values) keep their order
  const byName = (a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[2] - b[2]);
  const sortAndCombine = (list) => {
    const copy = [];
    for (let i = 0; i < list.length; i++) copy[i] = [list[i][0], list[i][1], i];
    apply(arraySort, copy, [byName]);
    const out = [];
    for (let i = 0; i < copy.length; i++) {
      const n = copy[i][0], v = copy[i][1];
      const last = out[out.length - 1];
      if (n !== "set-cookie" && last !== undefined && last[0] === n) last[1] = `${last[1]}, ${v}`;
      else out[out.length] = [n, v];
    }
    return out;
  };
  // HeadersInit: a sequence of [name, value] pairs or a record of them
  const fill = (h, init, what) => {
    if (!object(init)) throw new TE(`${what}: init is not a sequence or a record`);
    const method = init[iterSym];
    if (method !== undefined && method !== null) {
      if (typeof method !== "function") throw new TE(`${what}: init[Symbol.iterator] is not a function`);
      const pairs = [];
      for (const pair of { [iterSym]: () => apply(method, init, []) }) {
        if (!object(pair)) throw new TE(`${what}: a header pair is not a sequence`);
        const items = [];
        for (const x of pair) items[items.length] = byteString(x, what);
        if (items.length !== 2) throw new TE(`${what}: a header pair must have exactly two items`);
        pairs[pairs.length] = items;
      }
      for (let i = 0; i < pairs.length; i++) append(h, pairs[i][0], pairs[i][1], what);
      return;
    }
    const keys = ownKeys(init);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i], d = gopd(init, k);
      if (d === undefined || !d.enumerable) continue;
      if (typeof k === "symbol") throw new TE(`${what}: a record key is a Symbol`);
      append(h, byteString(k, what), byteString(init[k], what), what);
    }
  };

  native.pairIterable(Headers, "Headers", sortedOf);
  native.webIDL(Headers, "Headers");

  native.Headers = Headers;
  native.isHeaders = isHeaders;
  native.headersFill = (h, init) => fill(h, init, "Headers");
  native.headersList = listOf;            // the live list: [[name, value]] (names lowercased)
  native.headersGet = (h, name) => get(listOf(h), name);
  native.headersAppend = (h, name, value) => append(h, name, value, "Headers.append");
  native.headersGuard = guardOf;
  native.setHeadersGuard = setGuard;
  native.checkHeaderName = checkName;
};
