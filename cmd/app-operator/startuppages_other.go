//go:build !linux

package main

// releaseStartupPages does nothing outside Linux.
func releaseStartupPages() {}
