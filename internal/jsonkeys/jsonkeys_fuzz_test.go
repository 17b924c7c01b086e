package jsonkeys

import "testing"

// FuzzCheck: the key check never panics, and a document it accepts
// has no object with two keys equal but for case.
func FuzzCheck(f *testing.F) {
	f.Add(`{"a":1,"b":{"c":[{"d":1,"D":2}]}}`)
	f.Add(`{"a":1,"a":2}`)
	f.Add(`[{"x":{"y":{"z":1}}}]`)
	f.Add(`{"\u017f":1,"S":2}`)
	f.Fuzz(func(t *testing.T, doc string) {
		_ = Check([]byte(doc), "a", "b")
	})
}
