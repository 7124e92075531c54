# frozen_string_literal: true

require "json"
require "securerandom"
require_relative "start_error"
require_relative "version"

module Up
  # The state file (--state-path, the config file's state_path), Puma's state_path for UP!:
  # what upctl needs to reach a running server, the control token above all when the server
  # made it. JSON (which YAML readers take too): pid, control_url, control_token, version,
  # runtime. Mode 0600, since the token lets whoever reads it stop the server. The launchers
  # write it once the sockets are bound (again after a hot restart, with the same pid and
  # token); Up::Ctl reads it. It is left in place at a stop: a pid that no longer runs tells
  # upctl the server is gone.
  class StateFile
    class Error < StandardError; end

    # The control token a process made, for the image a hot restart executes in its place.
    ENV_CONTROL_TOKEN = "UP_CONTROL_TOKEN"

    # options with the control token: the one given, else the one a previous image of this
    # process made (across a hot restart), else a new one; control_token_made says it was not
    # given (the control endpoint logs it). Unchanged without --control-url.
    def self.with_control_token(options, env = ENV)
      made = env.delete(ENV_CONTROL_TOKEN)
      return options unless options[:control_url] && !options[:control_token]

      options.merge(control_token: made || SecureRandom.hex(16), control_token_made: true)
    end

    # What a hot restart's exec passes on: the token this process made.
    def self.exec_env(options)
      options[:control_token_made] ? { ENV_CONTROL_TOKEN => options[:control_token] } : {}
    end

    # What the file says of this process.
    def self.state(options, runtime)
      { pid: Process.pid, control_url: options[:control_url], control_token: options[:control_token],
        version: VERSION, runtime: runtime }
    end

    def self.write(path, state)
      tmp = "#{path}.#{Process.pid}.tmp"
      File.open(tmp, File::WRONLY | File::CREAT | File::TRUNC, 0o600) do |f|
        f.chmod(0o600) # a file left by a crash may have had other bits
        f.write("#{JSON.generate(state.compact)}\n")
      end
      File.rename(tmp, path)
    rescue SystemCallError => e
      raise StartError, "cannot write the state file: #{e.message}"
    end

    # The state as a Hash with Symbol keys. Raises Error.
    def self.read(path)
      state = JSON.parse(File.read(path), symbolize_names: true)
      raise Error, "#{path} is not a state file" unless state.is_a?(Hash)

      state
    rescue SystemCallError => e
      raise Error, "cannot read the state file: #{e.message}"
    rescue JSON::ParserError
      raise Error, "#{path} is not a state file"
    end
  end
end
