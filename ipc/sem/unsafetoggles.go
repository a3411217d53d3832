//go:build tasklist_unsafe

package sem

// The code path of the unsafe plan toggle sem-perm-no-revalidate (the
// NoRevalidate design), built only with the tasklist_unsafe build tag;
// without it unsafetoggles_off.go stands in for this file and
// NewNamespaceLocking refuses the design.

// skipsRevalidation reports whether a call on s skips the check, under
// the set's lock, that the set it looked up without the lock was not
// removed meanwhile (ipc_valid_object), as seed 003's race needs.
func (s *Set) skipsRevalidation() bool { return s.lk.NoRevalidate }
