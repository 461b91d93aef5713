// tests/wpt/rates.py's Worker: runs the one classic script a WPT file is (the body of the POST)
// in the global scope, through workerd's unsafe-eval binding, and answers with its value.
export default {
  async fetch(request, env) {
    const program = await request.text();
    try {
      return Response.json({ value: await env.eval.eval(program) });
    } catch (e) {
      return Response.json({ error: String((e && e.stack) || e) });
    }
  },
};
