//go:build !tasklist_unsafe

package sem

// Without the tasklist_unsafe build tag no namespace has the NoRevalidate
// design (NewNamespaceLocking refuses it): every call revalidates.

func (s *Set) skipsRevalidation() bool { return false }
