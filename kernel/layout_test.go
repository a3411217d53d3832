package kernel

import (
	"testing"
	"unsafe"
)

// TestObjectSizeClasses keeps the objects every fork allocates within the
// allocator's size classes that fork's memory cost is reckoned in: one
// field more can move an object to the next class (Task from 384 to 416
// bytes, ThreadGroup from 512 to 576) and every process costs that much
// more. Packing fields differently, or giving up one, gets it back.
func TestObjectSizeClasses(t *testing.T) {
	for _, c := range []struct {
		name       string
		size, want uintptr
	}{
		{"Task", unsafe.Sizeof(Task{}), 384},
		{"ThreadGroup", unsafe.Sizeof(ThreadGroup{}), 512},
	} {
		if c.size > c.want {
			t.Errorf("%s is %d bytes, over the %d-byte size class", c.name, c.size, c.want)
		}
	}
}
