// Package hostile reads the certification suite's scripted relays
// (client/ts/test/testdata/hostile.json) and encodes what each one sends, so every Go test
// that drives a client against them (the Go client's own, and the C and C# clients' in
// e2e) scripts the relay from one encoder.
//
// Use Load to read the file, Scenario.Answer to get the bytes and the action for a join,
// and a WebSocket server of the test's own to send them.
//
// # The file
//
// Its "about" says how to read it; the TypeScript client's tests read the same file with
// an encoder of their own (client/ts/test/hostile.test.ts).
package hostile
