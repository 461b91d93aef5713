// What Request and Response share (WHATWG Fetch): extracting a body from a BodyInit, the Body
// mixin (text/json/arrayBuffer/bytes/blob/formData, body, bodyUsed), the multipart/form-data
// serializer and parser, and the Web IDL pair iterator that Headers and FormData use.
// A body is held as bytes (a Blob's bytes are shared: they are never written) or, once a
// program asks for `body` or gives a ReadableStream, as a stream. The stream hooks
// (native.streamFromBytes, isReadableStream, readAllBytes; optional streamDisturbed,
// streamLocked, teeStream) come from a later file: they are read when called.
(native) => {
  const { utf8Encode, utf8Text, indexOfBytes, concatBytes, randomFill } = native;
  const G = globalThis, TE = TypeError, U8 = Uint8Array, PromiseC = Promise;
  const apply = Reflect.apply, ownKeys = Reflect.ownKeys;
  const { defineProperty: dp, getOwnPropertyDescriptor: gopd, create } = Object;
  const jsonParse = JSON.parse, iterSym = Symbol.iterator, tagSym = Symbol.toStringTag;
  const WM = WeakMap, wmGet = WeakMap.prototype.get, wmSet = WeakMap.prototype.set;
  const TA = Object.getPrototypeOf(U8);
  const taSlice = TA.prototype.slice, taSub = TA.prototype.subarray, taBuffer = gopd(TA.prototype, "buffer").get;
  const strReplace = String.prototype.replace, strToLower = String.prototype.toLowerCase;
  const strSlice = String.prototype.slice, strIndexOf = String.prototype.indexOf;
  const strTrim = String.prototype.trim;
  const strWellFormed = String.prototype.toWellFormed, numToString = Number.prototype.toString;
  const promiseThen = PromiseC.prototype.then, split = String.prototype.split;
  const resolve = (v) => apply(PromiseC.resolve, PromiseC, [v]);
  const reject = (e) => apply(PromiseC.reject, PromiseC, [e]);
  const object = (v) => v !== null && (typeof v === "object" || typeof v === "function");
  const usv = (v) => apply(strWellFormed, `${v}`, []);
  const lower = (s) => apply(strToLower, s, []);
  const noStreams = (what) => new TE(`${what}: streams are not available`);

  // ---- the Web IDL pair iterator: `pairsOf(target)` gives the current list (and is the brand
  // check); the iterator walks it by index, so it sees changes made while iterating
  const IteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([][iterSym]()));
  native.pairIterable = (C, name, pairsOf) => {
    const state = new WM();
    const proto = create(IteratorPrototype);
    const methods = {
      next() {
        const s = apply(wmGet, state, [this]);
        if (!s) throw new TE(`next: 'this' is not a ${name} Iterator`);
        const pairs = pairsOf(s.target);
        if (s.i >= pairs.length) return { value: undefined, done: true };
        const pair = pairs[s.i++], k = pair[0], v = pair[1];
        return { value: s.kind === 0 ? k : s.kind === 1 ? v : [k, v], done: false };
      },
    };
    dp(proto, "next", { value: methods.next, writable: true, enumerable: true, configurable: true });
    dp(proto, tagSym, { value: `${name} Iterator`, configurable: true });
    const make = (target, kind) => {
      pairsOf(target);
      const it = create(proto);
      apply(wmSet, state, [it, { target, kind, i: 0 }]);
      return it;
    };
    const ops = {
      entries() {
        return make(this, 2);
      },
      keys() {
        return make(this, 0);
      },
      values() {
        return make(this, 1);
      },
      forEach(callback, thisArg = undefined) {
        pairsOf(this);
        if (typeof callback !== "function") throw new TE(`${name}.forEach: callback is not a function`);
        for (let i = 0, pairs = pairsOf(this); i < pairs.length; i++, pairs = pairsOf(this)) {
          apply(callback, thisArg, [pairs[i][1], pairs[i][0], this]);
        }
      },
    };
    for (const k of ["entries", "keys", "values", "forEach"]) {
      dp(C.prototype, k, { value: ops[k], writable: true, enumerable: true, configurable: true });
    }
    dp(C.prototype, iterSym, { value: ops.entries, writable: true, configurable: true });
  };

  // ---- Web IDL class shape: members enumerable, the class string, the global
  native.webIDL = (C, name) => {
    for (const obj of [C, C.prototype]) {
      for (const k of ownKeys(obj)) {
        if (typeof k === "string" && k !== "prototype" && k !== "constructor" && k !== "length" && k !== "name") {
          dp(obj, k, { ...gopd(obj, k), enumerable: true });
        }
      }
    }
    dp(C.prototype, tagSym, { value: name, configurable: true });
    dp(G, name, { value: C, writable: true, configurable: true });
  };

  // ---- MIME types: the essence and the parameters (RFC 9110 media-type, as Fetch parses them)
  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/, reTest = RegExp.prototype.test;
  const isToken = (s) => apply(reTest, TOKEN, [s]);
  // (indexOf and slice, not a loop over characters: a body's part headers go through here)
  const indexOf = (s, c, from = 0) => apply(strIndexOf, s, [c, from]);
  const slice = (s, from, to) => apply(strSlice, s, [from, to]);
  const trim = (s) => apply(strTrim, s, []);
  const mimeParams = (value) => {
    const s = `${value}`, n = s.length;
    let i = indexOf(s, ";");
    const essence = lower(trim(i < 0 ? s : slice(s, 0, i)));
    const params = create(null);
    while (i >= 0 && i < n) {
      i++;
      const semi = indexOf(s, ";", i), end = semi < 0 ? n : semi;
      const eq = indexOf(slice(s, i, end), "=");   // within this parameter only: linear overall
      if (eq < 0) {
        i = semi;
        continue;
      }
      const name = lower(trim(slice(s, i, i + eq)));
      i += eq + 1;
      let val;
      if (s[i] === '"') {
        // a quoted string: a backslash escapes the next character; ";" may be inside
        val = "";
        i++;
        while (i < n && s[i] !== '"') {
          if (s[i] === "\\" && i + 1 < n) i++;
          val += s[i++];
        }
        i = indexOf(s, ";", i);
      } else {
        val = trim(slice(s, i, end));
        i = semi;
      }
      if (name !== "" && !(name in params)) params[name] = val;
    }
    return { essence, params };
  };
  native.mimeParams = mimeParams;
  // the MIME type of a Content-Type value, serialized (Blob's type for blob()): "" if invalid
  const mimeSerialize = (value) => {
    const { essence, params } = mimeParams(value);
    const slash = apply(strIndexOf, essence, ["/"]);
    if (slash <= 0 || slash === essence.length - 1 || !isToken(apply(strSlice, essence, [0, slash]))
      || !isToken(apply(strSlice, essence, [slash + 1]))) return "";
    let out = essence;
    const names = ownKeys(params);
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      if (!isToken(name)) continue;
      const v = params[name];
      out += `;${name}=${v !== "" && isToken(v) ? v : `"${apply(strReplace, v, [/["\\]/g, "\\$&"])}"`}`;
    }
    return out;
  };

  // ---- multipart/form-data (RFC 7578; the names and line breaks as HTML's form encoding)
  // made on first use: a typed array made at build time costs every sandbox's image far more
  // than its bytes (web/README.md)
  let CRLF = null, HEADER_END = null;
  const needles = () => {
    CRLF ??= utf8Encode("\r\n");
    HEADER_END ??= utf8Encode("\r\n\r\n");
  };
  // (each replace only when needed: a regular expression replace costs ~12 µs, indexOf ~2)
  const escapeName = (s) => (indexOf(s, "\n") < 0 && indexOf(s, "\r") < 0 && indexOf(s, '"') < 0 ? s
    : apply(strReplace, s, [/[\n\r"]/g, (c) => (c === "\n" ? "%0A" : c === "\r" ? "%0D" : "%22")]));
  const unescapeName = (s) => (indexOf(s, "%") < 0 ? s
    : apply(strReplace, s, [/%0A|%0D|%22/g, (c) => (c === "%0A" ? "\n" : c === "%0D" ? "\r" : '"')]));
  const crlf = (s) => (indexOf(s, "\r") < 0 && indexOf(s, "\n") < 0 ? s
    : apply(strReplace, s, [/\r\n|\r|\n/g, "\r\n"]));
  const newBoundary = () => {
    const r = new U8(12);
    randomFill(r);
    let s = "----formdata-quickjail-";
    for (let i = 0; i < r.length; i++) s += (r[i] < 16 ? "0" : "") + apply(numToString, r[i], [16]);
    return s;
  };
  // entries: [[name, string | File]]; gives {bytes, type}
  native.multipartEncode = (entries) => {
    needles();
    const boundary = newBoundary(), chunks = [];
    for (let i = 0; i < entries.length; i++) {
      const name = entries[i][0], value = entries[i][1];
      let head = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(crlf(name))}"`;
      if (typeof value === "string") {
        chunks[chunks.length] = utf8Encode(`${head}\r\n\r\n${crlf(value)}\r\n`);
      } else {
        const fileName = native.fileInfo(value)[0];
        const type = native.blobType(value) || "application/octet-stream";
        head += `; filename="${escapeName(fileName)}"\r\nContent-Type: ${type}\r\n\r\n`;
        chunks[chunks.length] = utf8Encode(head);
        chunks[chunks.length] = native.blobBytes(value);
        chunks[chunks.length] = CRLF;
      }
    }
    chunks[chunks.length] = utf8Encode(`--${boundary}--\r\n`);
    return { bytes: concatBytes(chunks), type: `multipart/form-data; boundary=${boundary}` };
  };

  const badForm = () => new TE("Failed to parse body as FormData.");
  const find = (hay, needle, from) => (hay.length === 0 ? -1 : indexOfBytes(hay, needle, from));
  // the parts of a multipart body: [[name, string | File]]; TypeError if it is malformed.
  // Every search is native.indexOfBytes (linear), every step moves forward: linear in the body.
  const multipartDecode = (bytes, boundary) => {
    if (boundary === undefined || boundary === "" || boundary.length > 200) throw badForm();
    needles();
    const delim = utf8Encode(`--${boundary}`), next = utf8Encode(`\r\n--${boundary}`);
    let at = find(bytes, delim, 0);
    if (at < 0 || (at > 0 && find(apply(taSub, bytes, [at - 2, at]), CRLF, 0) !== 0)) throw badForm();
    const out = [];
    at += delim.length;
    for (;;) {
      if (bytes[at] === 0x2d && bytes[at + 1] === 0x2d) return out;
      while (bytes[at] === 0x20 || bytes[at] === 0x09) at++;
      if (bytes[at] !== 0x0d || bytes[at + 1] !== 0x0a) throw badForm();
      at += 2;
      const headEnd = find(bytes, HEADER_END, at);
      if (headEnd < 0 && !(bytes[at] === 0x0d && bytes[at + 1] === 0x0a)) throw badForm();
      const bodyAt = headEnd < 0 ? at + 2 : headEnd + 4;
      const head = headEnd < 0 ? "" : utf8Text(apply(taSub, bytes, [at, headEnd]));
      const end = find(bytes, next, bodyAt - 2);
      if (end < 0 || end < bodyAt - 2) throw badForm();
      let name, fileName, type;
      const lines = head === "" ? [] : apply(split, head, ["\r\n"]);
      for (let j = 0; j < lines.length; j++) {
        const line = lines[j];
        const colon = apply(strIndexOf, line, [":"]);
        if (colon <= 0) throw badForm();
        const field = lower(apply(strTrim, apply(strSlice, line, [0, colon]), []));
        const value = apply(strSlice, line, [colon + 1]);
        if (field === "content-disposition") {
          const { essence, params } = mimeParams(value);
          if (essence !== "form-data" || params.name === undefined) throw badForm();
          name = unescapeName(params.name);
          fileName = params.filename === undefined ? undefined : unescapeName(params.filename);
        } else if (field === "content-type") type = apply(strTrim, value, []);
      }
      if (name === undefined) throw badForm();
      const body = apply(taSub, bytes, [bodyAt, end < bodyAt ? bodyAt : end]);
      out[out.length] = [usv(name), fileName === undefined
        ? utf8Text(body)
        : native.makeFile(apply(taSlice, body, []), usv(fileName), native.normBlobType(type ?? "text/plain"))];
      at = end + next.length;
    }
  };
  native.multipartDecode = multipartDecode;

  // ---- extract a body (Fetch "extract a body"): {bytes | stream, type: string | null}
  native.extractBody = (init) => {
    if (native.isBlob(init)) {
      const type = native.blobType(init);
      return { bytes: native.blobBytes(init), stream: null, type: type === "" ? null : type };
    }
    const view = native.bytesOf(init);
    if (view) return { bytes: apply(taSlice, view, []), stream: null, type: null };
    if (native.isFormData?.(init)) {
      const { bytes, type } = native.multipartEncode(native.formDataEntries(init));
      return { bytes, stream: null, type };
    }
    const params = object(init) ? native.searchParamsString?.(init) : null;
    if (typeof params === "string") {
      return { bytes: utf8Encode(params), stream: null, type: "application/x-www-form-urlencoded;charset=UTF-8" };
    }
    if (object(init) && native.isReadableStream?.(init)) {
      if (native.streamDisturbed?.(init) || native.streamLocked?.(init)) {
        throw new TE("The body's ReadableStream is disturbed or locked");
      }
      return { bytes: null, stream: init, type: null };
    }
    return { bytes: utf8Encode(usv(init)), stream: null, type: "text/plain;charset=UTF-8" };
  };

  // ---- the Body mixin. A body record: {bytes, stream, used}; `stateOf(x)` gives
  // {body: record | null, headers} and is the brand check.
  const disturbed = (b) => b !== null && (b.used || (b.stream !== null && !!native.streamDisturbed?.(b.stream)));
  native.bodyUsed = disturbed;
  native.bodyLocked = (b) => b !== null && b.stream !== null && !!native.streamLocked?.(b.stream);
  native.bodyStream = (b, what) => {
    if (b.stream === null) {
      const fromBytes = native.streamFromBytes;
      if (typeof fromBytes !== "function") throw noStreams(what);
      // a copy: the stream hands its chunks to the program, and these bytes may be a Blob's
      b.stream = fromBytes(b.used ? new U8(0) : apply(taSlice, b.bytes, []));
      b.bytes = null;
    }
    return b.stream;
  };
  // the bytes of a body, for a reader inside the platform (fetchcap): marks it used. They may be
  // a Blob's: the caller must not write them or hand them to the program.
  const consume = (b, what) => {
    if (b === null) return resolve(new U8(0));
    if (disturbed(b) || native.bodyLocked(b)) return reject(new TE(`${what}: the body has already been used`));
    b.used = true;
    if (b.stream !== null) {
      const readAll = native.readAllBytes;
      return typeof readAll === "function" ? readAll(b.stream) : reject(noStreams(what));
    }
    return resolve(b.bytes);
  };
  native.consumeBody = consume;
  // clone a body record: bytes are shared (never written); a stream is teed
  native.cloneBody = (b, what) => {
    if (b === null) return null;
    if (disturbed(b) || native.bodyLocked(b)) throw new TE(`${what}: the body has already been used`);
    if (b.stream === null) return { bytes: b.bytes, stream: null, used: false };
    const tee = native.teeStream;
    if (typeof tee !== "function") throw noStreams(what);
    const branches = tee(b.stream);
    b.stream = branches[0];
    return { bytes: null, stream: branches[1], used: false };
  };

  native.bodyMixin = (C, stateOf) => {
    const name = C.name;
    const read = (self, what, convert) => {
      let s;
      try {
        s = stateOf(self);
      } catch (e) {
        return reject(e);
      }
      const got = consume(s.body, `${name}.${what}`);
      return convert ? apply(promiseThen, got, [(bytes) => convert(bytes, s)]) : got;
    };
    const contentType = (s) => native.headersGet(s.headers, "content-type");
    const copy = (bytes) => apply(taSlice, bytes, []);
    const members = {
      get body() {
        const s = stateOf(this);
        return s.body === null ? null : native.bodyStream(s.body, `${name}.body`);
      },
      get bodyUsed() {
        return disturbed(stateOf(this).body);
      },
      arrayBuffer() {
        return read(this, "arrayBuffer", (b) => apply(taBuffer, copy(b), []));
      },
      blob() {
        return read(this, "blob", (b, s) => native.makeBlob(copy(b), native.normBlobType(mimeSerialize(contentType(s) ?? ""))));
      },
      bytes() {
        return read(this, "bytes", copy);
      },
      formData() {
        return read(this, "formData", (b, s) => {
          const { essence, params } = mimeParams(contentType(s) ?? "");
          let entries;
          if (essence === "multipart/form-data") entries = multipartDecode(b, params.boundary);
          else if (essence === "application/x-www-form-urlencoded") entries = native.formParse(utf8Text(b));
          else throw new TE(`${name}.formData: the Content-Type is not multipart/form-data or application/x-www-form-urlencoded`);
          return native.newFormData(entries);
        });
      },
      json() {
        return read(this, "json", (b) => jsonParse(utf8Text(b)));
      },
      text() {
        return read(this, "text", utf8Text);
      },
    };
    for (const k of ownKeys(members)) {
      const d = gopd(members, k);
      if (d.get) dp(d.get, "name", { value: `get ${k}` });
      dp(C.prototype, k, { ...d, enumerable: true, configurable: true });
    }
  };
};
