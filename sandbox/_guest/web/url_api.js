// URL and URLSearchParams (WHATWG URL Standard): the getters and setters over url.js's parser,
// and application/x-www-form-urlencoded with its live link to the URL's query.
(native) => {
  const { FAIL, FORM, USERINFO, S, parse, serialize, origin, pct, pctDecode, toUSV, cannotHaveCredentials } =
    native.urlInternals;
  const { defineProperty } = Object;
  const uncurry = Function.prototype.bind.bind(Function.prototype.call);
  const SP = String.prototype;
  const sslice = uncurry(SP.slice), split = uncurry(SP.split), sIndexOf = uncurry(SP.indexOf);
  const replaceAll = uncurry(SP.replaceAll), push = uncurry(Array.prototype.push);

  // application/x-www-form-urlencoded
  const formParse = (s) => {
    const out = [], seqs = split(s, "&");
    for (let k = 0; k < seqs.length; k++) {
      const seq = seqs[k], i = sIndexOf(seq, "=");
      if (seq === "") continue;
      const name = i < 0 ? seq : sslice(seq, 0, i), value = i < 0 ? "" : sslice(seq, i + 1);
      push(out, [pctDecode(replaceAll(name, "+", " ")), pctDecode(replaceAll(value, "+", " "))]);
    }
    return out;
  };
  const formEncode = (s) => pct(s, FORM).replace(/%20/g, "+");
  const formSerialize = (list) => list.map(([n, v]) => `${formEncode(n)}=${formEncode(v)}`).join("&");

  let recordOf, linkParams, setList;
  const needArgs = (n, got, what) => {
    if (got < n) throw new TypeError(`${what}: ${n} argument${n > 1 ? "s" : ""} required, but only ${got} present.`);
  };

  class URLSearchParams {
    #list = [];
    #url = null;
    static {
      linkParams = (sp, url) => (sp.#url = url);
      setList = (sp, list) => (sp.#list = list);
    }
    constructor(init = "") {
      if (init !== null && (typeof init === "object" || typeof init === "function")) {
        if (init[Symbol.iterator] !== undefined) {
          for (const pair of init) {
            if (pair === null || (typeof pair !== "object" && typeof pair !== "function")) throw new TypeError("URLSearchParams: each pair must be an iterable object");
            const kv = Array.from(pair);
            if (kv.length !== 2) throw new TypeError("URLSearchParams: each pair must have exactly two items");
            this.#list.push([toUSV(kv[0]), toUSV(kv[1])]);
          }
        } else {
          // a record<USVString, USVString>: keys that are one USVString once their lone
          // surrogates are replaced are one entry, with the last value, where the first was
          const record = new Map();
          for (const key of Reflect.ownKeys(init)) {
            const desc = Reflect.getOwnPropertyDescriptor(init, key);
            if (desc?.enumerable) record.set(toUSV(key), toUSV(init[key]));
          }
          for (const [k, v] of record) this.#list.push([k, v]);
        }
      } else {
        const s = toUSV(init);
        this.#list = formParse(s[0] === "?" ? s.slice(1) : s);
      }
    }
    #update() {
      if (!this.#url) return;
      const u = recordOf(this.#url);
      const s = formSerialize(this.#list);
      u.query = s === "" ? null : s;
    }
    get size() {
      return this.#list.length;
    }
    append(name, value) {
      needArgs(2, arguments.length, "append");
      this.#list.push([toUSV(name), toUSV(value)]);
      this.#update();
    }
    delete(name, value) {
      needArgs(1, arguments.length, "delete");
      name = toUSV(name);
      const v = value === undefined ? undefined : toUSV(value);
      this.#list = this.#list.filter(([n, x]) => n !== name || (v !== undefined && x !== v));
      this.#update();
    }
    get(name) {
      needArgs(1, arguments.length, "get");
      name = toUSV(name);
      return this.#list.find(([n]) => n === name)?.[1] ?? null;
    }
    getAll(name) {
      needArgs(1, arguments.length, "getAll");
      name = toUSV(name);
      return this.#list.filter(([n]) => n === name).map(([, v]) => v);
    }
    has(name, value) {
      needArgs(1, arguments.length, "has");
      name = toUSV(name);
      const v = value === undefined ? undefined : toUSV(value);
      return this.#list.some(([n, x]) => n === name && (v === undefined || x === v));
    }
    set(name, value) {
      needArgs(2, arguments.length, "set");
      name = toUSV(name);
      value = toUSV(value);
      const i = this.#list.findIndex(([n]) => n === name);
      if (i < 0) this.#list.push([name, value]);
      else {
        this.#list[i][1] = value;
        this.#list = this.#list.filter(([n], j) => j <= i || n !== name);
      }
      this.#update();
    }
    sort() {
      this.#list.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      this.#update();
    }
    toString() {
      return formSerialize(this.#list);
    }
    forEach(callback, thisArg = undefined) {
      if (typeof callback !== "function") throw new TypeError("forEach: callback is not a function");
      for (let i = 0; i < this.#list.length; i++) callback.call(thisArg, this.#list[i][1], this.#list[i][0], this);
    }
    *entries() {
      for (let i = 0; i < this.#list.length; i++) yield [this.#list[i][0], this.#list[i][1]];
    }
    *keys() {
      for (let i = 0; i < this.#list.length; i++) yield this.#list[i][0];
    }
    *values() {
      for (let i = 0; i < this.#list.length; i++) yield this.#list[i][1];
    }
  }
  URLSearchParams.prototype[Symbol.iterator] = URLSearchParams.prototype.entries;

  const parseArgs = (url, base) => {
    let b = null;
    if (base !== undefined) {
      b = parse(toUSV(base));
      if (b === FAIL) return FAIL;
    }
    return parse(toUSV(url), b);
  };
  const invalid = (url) => new TypeError(`Invalid URL: ${`${url}`.slice(0, 200)}`);

  class URL {
    #u;
    #params;
    static {
      recordOf = (url) => url.#u;
    }
    constructor(url, base = undefined) {
      needArgs(1, arguments.length, "URL");
      const u = parseArgs(url, base);
      if (u === FAIL) throw invalid(url);
      this.#u = u;
      this.#params = new URLSearchParams();
      setList(this.#params, formParse(u.query ?? ""));
      linkParams(this.#params, this);
    }
    static canParse(url, base = undefined) {
      needArgs(1, arguments.length, "URL.canParse");
      return parseArgs(url, base) !== FAIL;
    }
    static parse(url, base = undefined) {
      needArgs(1, arguments.length, "URL.parse");
      return parseArgs(url, base) === FAIL ? null : new URL(url, base);
    }
    get href() {
      return serialize(this.#u);
    }
    set href(v) {
      const u = parse(toUSV(v));
      if (u === FAIL) throw invalid(v);
      this.#u = u;
      setList(this.#params, formParse(u.query ?? ""));
    }
    get origin() {
      return origin(this.#u);
    }
    get protocol() {
      return `${this.#u.scheme}:`;
    }
    set protocol(v) {
      this.#edit(`${toUSV(v)}:`, S.SCHEME_START);
    }
    get username() {
      return this.#u.username;
    }
    set username(v) {
      if (!cannotHaveCredentials(this.#u)) this.#u.username = pct(toUSV(v), USERINFO);
    }
    get password() {
      return this.#u.password;
    }
    set password(v) {
      if (!cannotHaveCredentials(this.#u)) this.#u.password = pct(toUSV(v), USERINFO);
    }
    get host() {
      const u = this.#u;
      return u.host === null ? "" : u.port === null ? u.host : `${u.host}:${u.port}`;
    }
    set host(v) {
      if (typeof this.#u.path !== "string") this.#edit(toUSV(v), S.HOST);
    }
    get hostname() {
      return this.#u.host ?? "";
    }
    set hostname(v) {
      if (typeof this.#u.path !== "string") this.#edit(toUSV(v), S.HOSTNAME);
    }
    get port() {
      return this.#u.port === null ? "" : `${this.#u.port}`;
    }
    set port(v) {
      if (cannotHaveCredentials(this.#u)) return;
      v = toUSV(v);
      if (v === "") this.#u.port = null;
      else this.#edit(v, S.PORT);
    }
    get pathname() {
      const p = this.#u.path;
      return typeof p === "string" ? p : p.map((s) => `/${s}`).join("");
    }
    set pathname(v) {
      if (typeof this.#u.path === "string") return;
      this.#u.path = [];
      parse(toUSV(v), null, this.#u, S.PATH_START);
    }
    get search() {
      const q = this.#u.query;
      return q ? `?${q}` : "";
    }
    set search(v) {
      v = toUSV(v);
      const u = this.#u;
      if (v === "") {
        u.query = null;
        setList(this.#params, []);
        return;
      }
      const input = v[0] === "?" ? v.slice(1) : v;
      u.query = "";
      parse(input, null, u, S.QUERY);
      setList(this.#params, formParse(input));
    }
    get searchParams() {
      return this.#params;
    }
    get hash() {
      const f = this.#u.fragment;
      return f ? `#${f}` : "";
    }
    set hash(v) {
      v = toUSV(v);
      const u = this.#u;
      if (v === "") {
        u.fragment = null;
        return;
      }
      u.fragment = "";
      parse(v[0] === "#" ? v.slice(1) : v, null, u, S.FRAGMENT);
    }
    toString() {
      return serialize(this.#u);
    }
    toJSON() {
      return serialize(this.#u);
    }
    // a setter's parse edits the record in place; a failure keeps what was done before it
    #edit(input, state) {
      parse(input, null, this.#u, state);
    }
  }

  for (const C of [URL, URLSearchParams]) {
    defineProperty(C.prototype, Symbol.toStringTag, { value: C.name, configurable: true });
    defineProperty(globalThis, C.name, { value: C, writable: true, configurable: true });
  }
};
