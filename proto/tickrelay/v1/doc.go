// Package tickrelayv1 holds the generated Go types of tickrelay's wire protocol and replay
// records, from tickrelay.proto beside this file. The .proto file is the protocol's
// reference documentation; `make proto` regenerates this package and `make proto-check`
// proves the committed code matches it.
package tickrelayv1
