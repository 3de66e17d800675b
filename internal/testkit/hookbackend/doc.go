// Package hookbackend is a test's game backend: it receives a relay's webhooks on
// loopback, checks each signature, de-duplicates by idempotency key and keeps the order
// events first arrived in. Use New, point the relay's --webhook-url at Backend.URL, then
// read Events or Of.
package hookbackend
