import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { printable } from "../src/index.js";

const data = JSON.parse(readFileSync(new URL("../../test/testdata/peertext.json", import.meta.url), "utf8")) as { cases: Array<{ in: string; want: string }> };

test("peer text is one printable line, as the relay makes it (peertext.json)", () => {
  assert.ok(data.cases.length > 5);
  for (const c of data.cases) {
    assert.equal(printable(c.in), c.want, JSON.stringify(c.in));
    assert.equal(printable(c.want), c.want, "idempotent");
    assert.ok(!printable(c.in).includes("\n"));
  }
  assert.equal(printable("lone \ud800 surrogate"), "lone \ufffd surrogate");
});
