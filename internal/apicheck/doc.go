// SPDX-License-Identifier: GPL-2.0-only

// Package apicheck holds no code: its tests check the shape of
// klpresolve's public packages (docs/architecture.md): that no exported
// declaration names an internal package, and that every package imports
// only packages of a layer below its own.
package apicheck
