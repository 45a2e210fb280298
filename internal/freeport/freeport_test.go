package freeport

import "testing"

// TestLoopbackNeverRepeats: many ports in a row are all distinct, although
// the kernel is free to offer a just-closed port again.
func TestLoopbackNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		port, err := Loopback()
		if err != nil {
			t.Fatal(err)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
	}
}
