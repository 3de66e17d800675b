// The retry and reconnect policy is one, as data: Go's client.ErrorCodes and CloseCodes,
// written to testdata/policy.json by `go test ./client -run PolicyTables -update-ts`, and
// this client's errorCodes and closeCodes must say the same, row for row.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { closeCodeInfo, closeCodes, errorCodes, joinAgain, pb, RelayError } from "../src/index.js";

interface Policy {
  errors: Array<{ code: number; name: string; retry: boolean; auto: boolean; meaning: string }>;
  closes: Array<{ code: number; name: string; reconnect: boolean; meaning: string }>;
}
const policy = JSON.parse(readFileSync(new URL("../../test/testdata/policy.json", import.meta.url), "utf8")) as Policy;

test("the error codes mean what the Go client's table says, and the session joins again after those it does", () => {
  assert.equal(Object.keys(errorCodes).length, policy.errors.length);
  for (const row of policy.errors) {
    const { code, ...want } = row;
    assert.deepEqual({ ...errorCodes[code as pb.ErrorCode] }, want, `error code ${code}`);
    assert.equal(joinAgain(new RelayError(code as pb.ErrorCode, "x")), want.auto, `joinAgain after ${want.name}`);
  }
});

test("the close codes mean what the Go client's table says; an unknown one is not reconnected after", () => {
  assert.deepEqual(Object.keys(closeCodes).map(Number).sort((a, b) => a - b), policy.closes.map((c) => c.code));
  for (const row of policy.closes) {
    const { code, ...want } = row;
    assert.deepEqual({ ...closeCodes[code] }, want, `close code ${code}`);
    assert.equal(closeCodeInfo(code).reconnect, want.reconnect);
  }
  assert.equal(closeCodeInfo(1013).reconnect, false, "TRY_AGAIN_LATER: a new session later");
  assert.equal(closeCodeInfo(4999).reconnect, false);
});
