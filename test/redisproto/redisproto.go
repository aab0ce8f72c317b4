// Package redisproto reads what a Redis client sends, for the tests' fake Redis
// nodes: a command is a RESP array of bulk strings.
package redisproto

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ReadCommand reads one command: a RESP array of bulk strings.
func ReadCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	count, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || count < 1 {
		return nil, fmt.Errorf("not a command: %q", line)
	}
	args := make([]string, count)
	for i := range args {
		head, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}
