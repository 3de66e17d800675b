package wasm

import "errors"

var (
	// ErrLoad means a file could not be loaded as a sim module: not WebAssembly, a
	// missing or mistyped export, a wrong ABI version, a bad name or version, an import
	// the host does not provide, two modules claiming one sim. The message names the file
	// and what to fix.
	ErrLoad = errors.New("wasm: cannot load the module")
	// ErrFailed means a call into a module failed: it trapped, exited, ran out of fuel,
	// returned a failure status or broke the ABI (abi.ErrMalformed). The message names
	// the file and the export.
	ErrFailed = errors.New("wasm: the module failed")
	// ErrNotSupported means the module does not export an optional function, or its
	// export reported that it does not support it.
	ErrNotSupported = errors.New("wasm: not supported by the module")
)
