package testenv

import (
	"fmt"
	"io"
	"net/http"
)

// Get returns the body GET url answers; an error for a status other than
// 200, with the server and the start of the body.
func Get(hc *http.Client, url string) (string, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("%s: %s (server %q, body %.200q)", url, resp.Status, resp.Header.Get("Server"), body)
	}
	return string(body), nil
}
