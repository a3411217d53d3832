//go:build tasklist_unsafe

package plan

// UnsafeBuilt reports whether this build has the code paths of the unsafe
// toggles, which only a build with the tasklist_unsafe tag has.
const UnsafeBuilt = true
