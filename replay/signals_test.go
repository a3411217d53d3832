package replay

import "testing"

// strace's signal sets, with -X verbose's numbers and without.
func TestArgSigset(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"[]", 0, true},
		{"[CHLD INT]", 1<<16 | 1<<1, true},
		{"[17 /* CHLD */ 2 /* INT */]", 1<<16 | 1<<1, true},
		{"~[RTMIN RT_1]", ^uint64(1<<31 | 1<<32), true},
		{"~[32 /* RTMIN */ 33 /* RT_1 */]", ^uint64(1<<31 | 1<<32), true},
		{"~[]", ^uint64(0), true},
		{"NULL", 0, false},
		{"[BOGUS]", 0, false},
		{"[65]", 0, false},
	} {
		got, ok := argSigset(c.in)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("argSigset(%q) = %#x, %v; want %#x, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
