package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `# a build line that is not JSON
{"Action":"run","Package":"example.com/m/a","Test":"TestSlow"}
{"Action":"pass","Package":"example.com/m/a","Test":"TestSlow/sub","Elapsed":40}
{"Action":"pass","Package":"example.com/m/a","Test":"TestSlow","Elapsed":41.5}
{"Action":"fail","Package":"example.com/m/a","Test":"TestFast","Elapsed":0.2}
{"Action":"fail","Package":"example.com/m/a","Elapsed":42}
{"Action":"pass","Package":"example.com/m/b/c","Test":"TestMid","Elapsed":3}
{"Action":"pass","Package":"example.com/m/b/c","Elapsed":3.1}
`

func TestTheReportListsPackagesAgainstHalfTheirTimeoutAndTheSlowestTopLevelTests(t *testing.T) {
	r, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	r.File, r.Timeout = "unit.json", time.Minute
	var out bytes.Buffer
	report(&out, []run{r}, 2)
	assert.Equal(t, `package times of unit.json (-timeout 1m0s; budget 30s, half of it):
      42.0s  140% of budget  a  OVER BUDGET  FAILED
       3.1s   10% of budget  b/c
the 2 slowest tests:
      41.5s  a TestSlow
       3.0s  b/c TestMid
`, out.String())
}

func TestAFileWithoutEventsOrABadArgumentIsAnError(t *testing.T) {
	_, err := parse(strings.NewReader("no json here\n"))
	assert.ErrorIs(t, err, errNoEvents)
	for _, arg := range []string{"unit.json", "unit.json:soon", "unit.json:-1m"} {
		_, err := readRun(arg)
		assert.Error(t, err, arg)
	}
}

func TestModulePrefixStopsAtASlash(t *testing.T) {
	assert.Equal(t, "example.com/m/", modulePrefix([]string{"example.com/m/a", "example.com/m/ab"}))
	assert.Equal(t, "example.com/m/", modulePrefix([]string{"example.com/m/a"}))
	assert.Equal(t, "", modulePrefix([]string{"a", "b"}))
}
