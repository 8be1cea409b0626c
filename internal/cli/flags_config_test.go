package cli

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// mustConfigFile writes text to a configuration file and returns its path.
func mustConfigFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "parley.conf")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseServe_ConfigFile(t *testing.T) {
	file := mustConfigFile(t, `# a node
id = from-file
partitions = 8
zone = z-file

join = h1:7071
join = h2:7071
dead-after = "45s"
log-level = warn
`)
	t.Run("flags beat the environment, which beats the file, which beats the defaults", func(t *testing.T) {
		o, err := ParseServe("parley serve", []string{"--config", file, "--partitions", "6"}, envMap(map[string]string{"PARLEY_ZONE": "z-env", "PARLEY_PARTITIONS": "5"}))
		if err != nil {
			t.Fatal(err)
		}
		c := o.Config
		if c.ID != "from-file" || c.Partitions != 6 || c.Zone != "z-env" || c.DeadAfter != 45*time.Second || !slices.Equal(c.Join, []string{"h1:7071", "h2:7071"}) || c.ReplicationFactor != 3 {
			t.Errorf("config = id %q partitions %d zone %q dead-after %v join %q rf %d", c.ID, c.Partitions, c.Zone, c.DeadAfter, c.Join, c.ReplicationFactor)
		}
		if o.Log.Level.String() != "WARN" {
			t.Errorf("log level %v, want warn from the file", o.Log.Level)
		}
	})
	t.Run("the file is named by $PARLEY_CONFIG", func(t *testing.T) {
		o, err := ParseServe("parley serve", nil, envMap(map[string]string{"PARLEY_CONFIG": file}))
		if err != nil || o.Config.ID != "from-file" {
			t.Errorf("id %q, err %v", o.Config.ID, err)
		}
	})
	t.Run("a list flag on the command line replaces the file's", func(t *testing.T) {
		o, err := ParseServe("parley serve", []string{"--config", file, "--join", "h3:7071"}, nil)
		if err != nil || !slices.Equal(o.Config.Join, []string{"h3:7071"}) {
			t.Errorf("join %q, err %v", o.Config.Join, err)
		}
	})
	for _, tc := range []struct {
		name, text, want string
	}{
		{"unknown flag", "id = a\nno-such-flag = 1\n", `parley.conf:2: unknown flag "no-such-flag"`},
		{"bad value", "partitions = many\n", `parley.conf:1: invalid value "many" for flag --partitions`},
		{"no equals sign", "id a\n", `parley.conf:1: want name = value, got "id a"`},
		{"dashes", "--id = a\n", `parley.conf:1: name the flag without dashes: "id"`},
		{"nested file", "config = other.conf\n", "parley.conf:1: a configuration file cannot name another"},
		{"invalid setting", "partitions = 0\n", "partitions 0: want 1 to 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseServe("parley serve", []string{"--config", mustConfigFile(t, tc.text)}, nil)
			var u *usageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := ParseServe("parley serve", []string{"--config", filepath.Join(t.TempDir(), "none.conf")}, nil)
		if err == nil || !strings.Contains(err.Error(), "--config: open") {
			t.Errorf("err = %v", err)
		}
	})
}
