# frozen_string_literal: true

module Bench
  # One row of the tables: a server in one configuration (UP! appears four times: its
  # defaults, one thread, five threads; puma twice). Knows the command line that
  # starts it for a given app, port and worker count, and how to describe that mode in the
  # table. Created once each in Bench::Peers.
  class Peer
    # What a command line gets to fill in: the port, the app's path, the worker count, a
    # private temporary directory for config files, when a scenario needs a server to hold
    # more connections than its usual limit, how many (nil: the usual), what the app asks
    # UP! to be given (Bench::Apps, up_args; nil: nothing) and what it asks this peer to be
    # given (Bench::Apps, peer_args; nil: nothing).
    Context = Struct.new(:port, :app, :workers, :dir, :connections, :up_args, :args, keyword_init: true)

    # key: unique, usable with --only. group: --only name shared by several rows ("up", "puma").
    # name: what the table shows. gem: whose version to report (from bench/Gemfile.lock; for a
    # :native row the program's, from its --version).
    # runtime: :up (main Gemfile, run from the repo root), :peer (bench/Gemfile, run from the
    # temporary directory) or :native (no Ruby). apps: the only apps it can serve (nil: all).
    # mode: a lambda of the worker count, the "mode" column. placeholders: {path => name} for
    # paths of this run only in its argv, which the printed command lines show by name
    # ($BASELINE). The block returns the argv.
    attr_reader :key, :group, :name, :gem, :runtime, :apps, :note, :placeholders

    def initialize(key:, name:, runtime:, mode:, group: key, gem: nil, apps: nil, note: nil, placeholders: {},
                   &command)
      @key = key
      @group = group
      @name = name
      @gem = gem
      @runtime = runtime
      @apps = apps
      @note = note
      @placeholders = placeholders
      @mode = mode
      @command = command
    end

    def mode(workers)
      @mode.call(workers)
    end

    def serves?(app)
      @apps.nil? || @apps.include?(app)
    end

    # The argv that starts this server; may write config files into context.dir.
    def command(context)
      @command.call(context)
    end

    def ruby?
      @runtime != :native
    end
  end
end
