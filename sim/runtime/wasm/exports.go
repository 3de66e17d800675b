package wasm

import (
	"strings"

	"github.com/tetratelabs/wazero/api"

	"github.com/tickrelay/tickrelay/sim/runtime/wasm/abi"
)

// signature is a function type.
type signature struct{ params, results []api.ValueType }

var (
	i32, i64 = api.ValueTypeI32, api.ValueTypeI64
	// required are the exports every module has, with their signatures.
	required = []struct {
		name string
		sig  signature
	}{
		{abi.ExportABI, signature{nil, []api.ValueType{i32}}},
		{abi.ExportName, signature{nil, []api.ValueType{i64}}},
		{abi.ExportVersion, signature{nil, []api.ValueType{i32}}},
		{abi.ExportBuffer, signature{[]api.ValueType{i32}, []api.ValueType{i32}}},
		{abi.ExportInit, signature{[]api.ValueType{i64, i32, i32}, []api.ValueType{i32}}},
		{abi.ExportStep, signature{[]api.ValueType{i64, i32, i32}, []api.ValueType{i32}}},
		{abi.ExportHash, signature{nil, []api.ValueType{i64}}},
	}
	// optional are the exports a module may have, with their signatures.
	optional = map[string]signature{
		abi.ExportError:     {nil, []api.ValueType{i64}},
		abi.ExportSnapshot:  {nil, []api.ValueType{i64}},
		abi.ExportRestore:   {[]api.ValueType{i32}, []api.ValueType{i32}},
		abi.ExportOutcome:   {nil, []api.ValueType{i64}},
		abi.ExportSubHashes: {nil, []api.ValueType{i64}},
		abi.ExportDump:      {nil, []api.ValueType{i64}},
		abi.ExportSample:    {[]api.ValueType{i64, i32}, []api.ValueType{i64}},
		abi.ExportReactor:   {nil, nil},
	}
)

// String writes the type as "(i64, i32, i32) -> (i32)".
func (s signature) String() string {
	types := func(ts []api.ValueType) string {
		names := make([]string, 0, len(ts))
		for _, t := range ts {
			names = append(names, api.ValueTypeName(t))
		}
		return "(" + strings.Join(names, ", ") + ")"
	}
	return types(s.params) + " -> " + types(s.results)
}

func sigOf(d api.FunctionDefinition) signature { return signature{d.ParamTypes(), d.ResultTypes()} }

func (s signature) equal(o signature) bool {
	return string(s.params) == string(o.params) && string(s.results) == string(o.results)
}
