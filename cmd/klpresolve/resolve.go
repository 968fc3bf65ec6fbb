package main

import "github.com/spf13/cobra"

func addResolveFlags(root *cobra.Command, a *app) {}

func newConvertCmd(a *app) *cobra.Command { return &cobra.Command{Use: "convert", Hidden: true} }
