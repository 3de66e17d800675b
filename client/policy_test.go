package client_test

import (
	"encoding/json"
	"flag"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/testkit/golden"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
)

var updateTS = flag.Bool("update-ts", false, "rewrite the TypeScript client's policy table from this package's")

// policyGolden is where the TypeScript client's test (client/ts/test/policy.test.ts)
// reads the tables its errorCodes and closeCodes must equal.
const policyGolden = "ts/test/testdata/policy.json"

// TestThePolicyTablesAreTheTypeScriptClients writes the error and close code tables for
// the TypeScript client, which must follow them as the Go session does: one policy, as
// data (the clients disagreed on 1011, 1012 and 1014, and on INTERNAL and REDIRECT).
func TestThePolicyTablesAreTheTypeScriptClients(t *testing.T) {
	type errorRow struct {
		Code int32 `json:"code"`
		client.ErrorCodeInfo
	}
	type closeRow struct {
		Code int `json:"code"`
		client.CloseCodeInfo
	}
	var out struct {
		Errors []errorRow `json:"errors"`
		Closes []closeRow `json:"closes"`
	}
	for code, info := range client.ErrorCodes {
		out.Errors = append(out.Errors, errorRow{int32(code), info})
	}
	for code, info := range client.CloseCodes {
		out.Closes = append(out.Closes, closeRow{code, info})
	}
	slices.SortFunc(out.Errors, func(a, b errorRow) int { return int(a.Code - b.Code) })
	slices.SortFunc(out.Closes, func(a, b closeRow) int { return a.Code - b.Code })
	b, err := json.MarshalIndent(out, "", " ")
	assert.NoError(t, err)
	golden.Check(t, policyGolden, append(b, '\n'), *updateTS, "the client's policy tables", "go test ./client -run PolicyTables -update-ts")

	assert.Len(t, client.ErrorCodes, len(pb.ErrorCode_name), "every ErrorCode of the proto")
	for code := range pb.CloseCode_name {
		if code != 0 {
			assert.Contains(t, client.CloseCodes, int(code), "every CloseCode of the proto")
		}
	}
	for _, info := range client.ErrorCodes {
		assert.False(t, info.Auto && !info.Retry, "%s: joined again by itself, so it may succeed", info.Name)
	}
}
