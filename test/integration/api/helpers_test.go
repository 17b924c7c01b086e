//go:build integration

package api_test

import (
	"bufio"
	"bytes"
	"strconv"
)

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

func itoa(i int) string { return strconv.Itoa(i) }
