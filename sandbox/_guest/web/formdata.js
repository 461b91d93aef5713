// FormData (XHR Standard): an ordered list of [name, string | File]; a Blob value becomes a
// File (named "blob" unless a filename is given). No form element exists in a Worker, so the
// constructor takes no arguments but undefined. Bodies: fetch_body.js serializes it as
// multipart/form-data and parses formData() back into one (native.newFormData).
(native) => {
  const TE = TypeError;
  const apply = Reflect.apply, strWellFormed = String.prototype.toWellFormed;
  const { isBlob, isFile, blobBytes, blobType, fileInfo, makeFile } = native;
  const object = (v) => v !== null && (typeof v === "object" || typeof v === "function");
  const usv = (v) => apply(strWellFormed, `${v}`, []);
  function need(n, got, what) {
    if (got < n) throw new TE(`${what}: ${n} argument${n > 1 ? "s" : ""} required, but only ${got} present.`);
  }
  // "create an entry": a string value, or a File (a Blob is wrapped, a filename renames)
  const entry = (name, value, filename, argc, what) => {
    name = usv(name);
    if (argc > 2 || isBlob(value)) {
      if (!isBlob(value)) throw new TE(`${what}: parameter 2 is not of type 'Blob'.`);
      if (isFile(value) && filename === undefined) return [name, value];
      const info = isFile(value) ? fileInfo(value) : null;
      const fname = filename !== undefined ? usv(filename) : info ? info[0] : "blob";
      return [name, makeFile(blobBytes(value), fname, blobType(value), info ? info[1] : undefined)];
    }
    return [name, usv(value)];
  };

  let listOf, isFormData;
  class FormData {
    #list = [];
    static {
      listOf = (f) => {
        if (!isFormData(f)) throw new TE("'this' is not a FormData");
        return f.#list;
      };
      isFormData = (f) => object(f) && #list in f;
    }
    constructor(form = undefined) {
      if (form !== undefined) throw new TE("FormData: a form element is not supported here");
    }
    append(name, value, filename = undefined) {
      need(2, arguments.length, "FormData.append");
      const list = this.#list;
      list[list.length] = entry(name, value, filename, arguments.length, "FormData.append");
    }
    delete(name) {
      need(1, arguments.length, "FormData.delete");
      const n = usv(name), list = this.#list;
      let j = 0;
      for (let i = 0; i < list.length; i++) if (list[i][0] !== n) list[j++] = list[i];
      list.length = j;
    }
    get(name) {
      need(1, arguments.length, "FormData.get");
      const n = usv(name), list = this.#list;
      for (let i = 0; i < list.length; i++) if (list[i][0] === n) return list[i][1];
      return null;
    }
    getAll(name) {
      need(1, arguments.length, "FormData.getAll");
      const n = usv(name), list = this.#list, out = [];
      for (let i = 0; i < list.length; i++) if (list[i][0] === n) out[out.length] = list[i][1];
      return out;
    }
    has(name) {
      need(1, arguments.length, "FormData.has");
      const n = usv(name), list = this.#list;
      for (let i = 0; i < list.length; i++) if (list[i][0] === n) return true;
      return false;
    }
    set(name, value, filename = undefined) {
      need(2, arguments.length, "FormData.set");
      const e = entry(name, value, filename, arguments.length, "FormData.set"), list = this.#list;
      let j = 0, found = false;
      for (let i = 0; i < list.length; i++) {
        if (list[i][0] !== e[0]) list[j++] = list[i];
        else if (!found) {
          found = true;
          list[j++] = e;
        }
      }
      list.length = j;
      if (!found) list[list.length] = e;
    }
  }
  native.pairIterable(FormData, "FormData", listOf);
  native.webIDL(FormData, "FormData");

  native.isFormData = isFormData;
  native.formDataEntries = listOf;
  native.newFormData = (entries) => {
    const f = new FormData();
    const list = listOf(f);
    for (let i = 0; i < entries.length; i++) list[i] = [entries[i][0], entries[i][1]];
    return f;
  };
};
