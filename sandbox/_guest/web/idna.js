// UTS #46 processing for URL hosts, as the URL Standard's "domain to ASCII" asks for it
// (CheckHyphens=false, CheckBidi=true, CheckJoiners=true, UseSTD3ASCIIRules=false,
// Transitional_Processing=false, VerifyDnsLength=false), and Punycode (RFC 3492). Installs
// native.domainToASCII(domain) -> the ASCII domain, or null on failure, for url.js.
// The IDNA data (mapping table, Bidi classes, viramas, joining types) is the pinned idna
// wheel's, generated at build time (sandbox/_idna_tables.py) and held by web_idna.c; it is
// decoded on a run's first non-ASCII (or "xn--") host, so other runs touch none of it.
// Punycode works in O(n log n) on arrays (a Fenwick tree places the insertions), with no
// argument spreading: a label of any length neither throws RangeError nor takes quadratic time.
(native) => {
  const { idnaData } = native;
  const parseJSON = JSON.parse;
  const call = Function.prototype.call.bind(Function.prototype.call);
  const { normalize, codePointAt } = String.prototype;
  const { fromCharCode, fromCodePoint } = String;
  const { floor } = Math;
  const { apply } = Reflect;
  const MAXINT = 0x7fffffff;

  // ---- the data, decoded once per run
  // sandbox/_idna_tables.py's varints: 5 bits a character, least significant first; digits
  // 0-31 end a number, 32-63 carry on. With `running`, each number adds to the one before.
  const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";
  const ints = ([n, s], running) => {
    const DIGIT = new Int8Array(128).fill(-1);
    for (let i = 0; i < 64; i++) DIGIT[ALPHABET.charCodeAt(i)] = i;
    const a = new Int32Array(n);
    for (let i = 0, k = 0, v = 0, scale = 1, sum = 0; i < s.length; i++) {
      const d = DIGIT[s.charCodeAt(i)];
      if (d >= 32) {
        v += (d - 32) * scale;
        scale *= 32;
        continue;
      }
      v += d * scale;
      sum = running ? sum + v : v;
      a[k++] = sum;
      v = 0;
      scale = 1;
    }
    return a;
  };
  let tables = null;
  const load = () => {
    if (tables) return tables;
    const d = parseJSON(idnaData());
    const starts = ints(d.starts, true);
    const refs = ints(d.refs, false);
    const ref = new Int32Array(starts.length).fill(-1);
    for (let i = 0, r = 0; i < starts.length; i++) if (d.status[i] === "M") ref[i] = refs[r++];
    const ends = ints(d.lengths, true);
    const joining = [];
    for (const kind of Object.keys(d.joining)) joining.push([kind, ints(d.joining[kind], true)]);
    tables = {
      starts, status: d.status, ref, text: d.text, ends,
      bidiStarts: ints(d.bidiStarts, true), bidi: d.bidi, viramas: new Set(ints(d.viramas, true)), joining,
    };
    return tables;
  };
  // the i-th mapped string
  const mappedString = (t, i) => t.text.slice(i === 0 ? 0 : t.ends[i - 1], t.ends[i]);
  // the index of the last start <= cp (starts[0] is 0)
  const find = (starts, cp) => {
    let lo = 0, hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= cp) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const statusOf = (t, cp) => t.status[find(t.starts, cp)];
  const bidiOf = (t, cp) => t.bidi[find(t.bidiStarts, cp)];
  // Joining_Type (C, D, L, R, T) or "U"; each kind's ranges are [start, end) bounds
  const joiningOf = (t, cp) => {
    for (const [kind, bounds] of t.joining) {
      if (bounds.length === 0 || cp < bounds[0]) continue;
      if ((find(bounds, cp) & 1) === 0) return kind;
    }
    return "U";
  };

  // ---- Punycode (RFC 3492)
  const BASE = 36, TMIN = 1, TMAX = 26;
  const adapt = (delta, count, first) => {
    delta = first ? floor(delta / 700) : floor(delta / 2);
    delta += floor(delta / count);
    let k = 0;
    for (; delta > 455; k += BASE) delta = floor(delta / 35);
    return k + floor((36 * delta) / (delta + 38));
  };
  const threshold = (k, bias) => (k <= bias ? TMIN : k >= bias + TMAX ? TMAX : k - bias);
  const digit = (d) => fromCharCode(d + 22 + 75 * (d < 26));
  const digitValue = (c) =>
    c >= 48 && c <= 57 ? c - 22 : c >= 65 && c <= 90 ? c - 65 : c >= 97 && c <= 122 ? c - 97 : BASE;
  // a Fenwick tree over n slots: counts of marked slots
  const fenwick = (n, full) => {
    const tree = new Int32Array(n + 1);
    if (full) for (let i = 1; i <= n; i++) tree[i] = i & -i;
    let top = 1;
    while (top * 2 <= n) top *= 2;
    return {
      add(i, v) {
        for (i++; i <= n; i += i & -i) tree[i] += v;
      },
      // marked slots in [0, i)
      prefix(i) {
        let s = 0;
        for (; i > 0; i -= i & -i) s += tree[i];
        return s;
      },
      // the slot of the k-th (0-based) marked one
      nth(k) {
        let pos = 0;
        for (let step = top; step > 0; step >>= 1) {
          if (pos + step <= n && tree[pos + step] <= k) {
            pos += step;
            k -= tree[pos];
          }
        }
        return pos;
      },
    };
  };
  const fromCodePoints = (cps) => {
    const parts = [];
    for (let i = 0; i < cps.length; i += 4096) parts.push(apply(fromCodePoint, null, cps.slice(i, i + 4096)));
    return parts.join("");
  };
  const decode = (input) => {
    const d = input.lastIndexOf("-");
    const basic = d > 0 ? input.slice(0, d) : "";
    if (/[^\x00-\x7f]/.test(basic)) return null;
    const at = [], inserted = [];
    let n = 128, i = 0, bias = 72, len = basic.length;
    for (let p = d > 0 ? d + 1 : 0; p < input.length; ) {
      const old = i;
      for (let w = 1, k = BASE; ; k += BASE) {
        if (p >= input.length) return null;
        const v = digitValue(input.charCodeAt(p++));
        if (v >= BASE || v > floor((MAXINT - i) / w)) return null;
        i += v * w;
        const t = threshold(k, bias);
        if (v < t) break;
        if (w > floor(MAXINT / (BASE - t))) return null;
        w *= BASE - t;
      }
      len++;
      bias = adapt(i - old, len, old === 0);
      if (floor(i / len) > MAXINT - n) return null;
      n += floor(i / len);
      i %= len;
      if (n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff)) return null;
      at.push(i);
      inserted.push(n);
      i++;
    }
    // each insertion's final slot: the latest insertion takes its index among all slots, an
    // earlier one its index among the slots later ones left free; the basic code points fill
    // the rest in order
    const out = new Array(len);
    const free = fenwick(len, true);
    for (let j = inserted.length - 1; j >= 0; j--) {
      const slot = free.nth(at[j]);
      out[slot] = inserted[j];
      free.add(slot, -1);
    }
    for (let s = 0, b = 0; s < len; s++) if (out[s] === undefined) out[s] = basic.charCodeAt(b++);
    return fromCodePoints(out);
  };
  const encode = (input) => {
    const cps = [];
    for (const ch of input) cps.push(call(codePointAt, ch, 0));
    const parts = [];
    const others = [];
    const handled = fenwick(cps.length, false);
    for (let p = 0; p < cps.length; p++) {
      if (cps[p] < 0x80) {
        parts.push(fromCharCode(cps[p]));
        handled.add(p, 1);
      } else others.push(p);
    }
    const b = parts.length;
    if (b) parts.push("-");
    others.sort((x, y) => cps[x] - cps[y] || x - y);
    let n = 128, delta = 0, bias = 72, h = b;
    for (let j = 0; j < others.length; ) {
      const m = cps[others[j]];
      if (m - n > floor((MAXINT - delta) / (h + 1))) return null;
      delta += (m - n) * (h + 1);
      n = m;
      let e = j, prev = -1;
      while (e < others.length && cps[others[e]] === m) e++;
      for (let q = j; q < e; q++) {
        const p = others[q];
        // the code points below n between the previous occurrence and this one
        delta += handled.prefix(p) - handled.prefix(prev + 1);
        if (delta > MAXINT) return null;
        let r = delta;
        for (let k = BASE; ; k += BASE) {
          const t = threshold(k, bias);
          if (r < t) break;
          parts.push(digit(t + ((r - t) % (BASE - t))));
          r = floor((r - t) / (BASE - t));
        }
        parts.push(digit(r));
        bias = adapt(delta, h + 1, h === b);
        delta = 0;
        h++;
        prev = p;
      }
      delta += handled.prefix(cps.length) - handled.prefix(prev + 1);
      for (let q = j; q < e; q++) handled.add(others[q], 1);
      if (delta + 1 > MAXINT) return null;
      delta++;
      n++;
      j = e;
    }
    return parts.join("");
  };

  // ---- UTS #46 validity (section 4.1) and the rules of RFC 5892 (CONTEXTJ) and RFC 5893 (Bidi)
  const LEADING_MARK = /^\p{M}/u;
  const NON_ASCII = /[^\x00-\x7f]/;
  const codePoints = (s) => {
    const cps = [];
    for (const ch of s) cps.push(call(codePointAt, ch, 0));
    return cps;
  };
  const joinersOk = (t, cps) => {
    for (let p = 0; p < cps.length; p++) {
      const c = cps[p];
      if (c !== 0x200c && c !== 0x200d) continue;
      if (p > 0 && t.viramas.has(cps[p - 1])) continue;
      if (c === 0x200d) return false;
      // (Joining_Type:{L,D})(Joining_Type:T)* ZWNJ (Joining_Type:T)*(Joining_Type:{R,D})
      let q = p - 1;
      while (q >= 0 && joiningOf(t, cps[q]) === "T") q--;
      const before = q >= 0 ? joiningOf(t, cps[q]) : "U";
      q = p + 1;
      while (q < cps.length && joiningOf(t, cps[q]) === "T") q++;
      const after = q < cps.length ? joiningOf(t, cps[q]) : "U";
      if (!((before === "L" || before === "D") && (after === "R" || after === "D"))) return false;
    }
    return true;
  };
  const validLabel = (t, label, cps) => {
    if (call(normalize, label, "NFC") !== label) return false;
    if (label.startsWith("xn--") || label.includes(".") || LEADING_MARK.test(label)) return false;
    for (const c of cps) {
      const s = c < 0x80 ? "V" : statusOf(t, c);
      if (s !== "V" && s !== "D") return false;
    }
    return joinersOk(t, cps);
  };
  // RFC 5893 section 2, for a label of a domain that has right-to-left labels
  const bidiOk = (t, cps) => {
    if (cps.length === 0) return true;
    const first = bidiOf(t, cps[0]);
    if (first !== "L" && first !== "R" && first !== "A") return false;
    const rtl = first !== "L";
    const allowed = rtl ? "RANESCTOBM" : "LESCTOBM";
    let hasEN = false, hasAN = false, last = "";
    for (const c of cps) {
      const k = bidiOf(t, c);
      if (!allowed.includes(k)) return false;
      if (k === "E") hasEN = true;
      if (k === "N") hasAN = true;
      if (k !== "M") last = k;
    }
    if (rtl) return !(hasEN && hasAN) && "RAEN".includes(last) && last !== "";
    return last === "L" || last === "E";
  };
  const isRTL = (t, cps) => cps.some((c) => {
    const k = c < 0x80 ? "" : bidiOf(t, c);
    return k === "R" || k === "A" || k === "N";
  });

  const exec = Function.prototype.bind.call(Function.prototype.call, RegExp.prototype.exec);
  const { toLowerCase } = String.prototype;
  native.domainToASCII = (domain) => {
    // (the ASCII path, every special URL's host, uses only intrinsics captured here)
    if (exec(NON_ASCII, domain) === null && exec(/(^|\.)xn--/i, domain) === null) {
      const lower = call(toLowerCase, domain);
      return lower === "" ? null : lower;
    }
    const t = load();
    // map
    const mapped = [];
    for (const ch of domain) {
      const c = call(codePointAt, ch, 0);
      if (c < 0x80) {
        mapped.push(c >= 0x41 && c <= 0x5a ? fromCharCode(c + 32) : ch);
        continue;
      }
      const i = find(t.starts, c);
      const s = t.status[i];
      if (s === "V" || s === "D") mapped.push(ch);
      else if (s === "M") mapped.push(mappedString(t, t.ref[i]));
      else if (s !== "I") return null;
    }
    // normalize, break, convert and validate
    const labels = call(normalize, mapped.join(""), "NFC").split(".");
    const unicode = [];
    for (const label of labels) {
      let u = label;
      if (label.startsWith("xn--")) {
        if (NON_ASCII.test(label)) return null;
        u = decode(label.slice(4));
        if (u === null || u === "" || !NON_ASCII.test(u)) return null;
      }
      const cps = codePoints(u);
      if (!validLabel(t, u, cps)) return null;
      unicode.push(cps);
    }
    if (unicode.some((cps) => isRTL(t, cps)) && !unicode.every((cps) => bidiOk(t, cps))) return null;
    // to ASCII
    const out = [];
    for (let i = 0; i < labels.length; i++) {
      if (!NON_ASCII.test(labels[i])) out.push(labels[i]);
      else {
        const a = encode(labels[i]);
        if (a === null) return null;
        out.push(`xn--${a}`);
      }
    }
    const result = out.join(".");
    return result === "" ? null : result;
  };
};
