package guest

// The sim this module serves, set by Serve.
var (
	simName    []byte
	simVersion uint32
)

// Serve makes the module serve the sim registered under name and version. Call it from
// an init function of the module's main package: the host reads the name before it
// calls anything else.
func Serve(name string, version uint32) {
	simName, simVersion = []byte(name), version
}
