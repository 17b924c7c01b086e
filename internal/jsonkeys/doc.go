// Package jsonkeys refuses JSON documents whose keys can be read two ways:
// the same key twice in one object, two keys equal but for case, or a key
// spelled in another case than the field it sets. Go's encoding/json accepts
// all three, so the step server checks request bodies, and the steps their
// configs, before decoding them.
//
// It is pure: bytes in, an error out.
package jsonkeys
