import assert from "node:assert/strict";
import { test } from "node:test";

import { depthAt } from "../src/index.js";

test("rollback depths are a count per depth, read at a quantile as Go's HeadStats.DepthAt", () => {
  const depths = [0, 5, 3, 0, 2]; // 5 rollbacks 1 deep, 3 of 2, 2 of 4
  assert.equal(depthAt(depths, 0), 1);
  assert.equal(depthAt(depths, 0.5), 2);
  assert.equal(depthAt(depths, 0.99), 4);
  assert.equal(depthAt([], 0.5), 0, "no rollback");
});
