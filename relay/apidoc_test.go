package relay_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/relay"
)

// jsonFields lists the JSON names of t's fields (prefix + name), leaving out "-".
func jsonFields(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, prefix+name)
	}
	return out
}

// TestEveryFieldOfTheMatchAPIIsDocumented: a game author reads docs/wasm-sims.md for
// what POST /v1/matches takes and answers; a field added to the API without a line
// there fails here.
func TestEveryFieldOfTheMatchAPIIsDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../docs/wasm-sims.md")
	require.NoError(t, err)
	doc := string(b)
	i := strings.Index(doc, "\n## Matches of a module sim\n")
	require.GreaterOrEqual(t, i, 0)
	doc = doc[i:]
	fields := jsonFields(reflect.TypeFor[relay.CreateRequest](), "")
	fields = append(fields, jsonFields(reflect.TypeFor[relay.MatchOptions](), "options.")...)
	for _, f := range fields {
		if strings.HasPrefix(f, "options.") && strings.HasSuffix(f, "_input_delay") {
			assert.Contains(t, doc, "| `options.min_input_delay`, `options.max_input_delay` |", f)
			continue
		}
		assert.Contains(t, doc, "| `"+f+"` |", "the request's field %s has a row", f)
	}
	for _, f := range jsonFields(reflect.TypeFor[relay.CreateResponse](), "") {
		assert.Contains(t, doc, "`"+f+"`", "the answer's field %s is named", f)
	}
}
