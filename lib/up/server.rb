# frozen_string_literal: true

require "monitor"
require_relative "native_extension"
require_relative "log"
require_relative "pub_sub"
require_relative "client"

module Up
  # One engine server (the C part is ext/up/ruby/server_object.c): the runners (Up::Single,
  # Up::Cluster::Worker) create it with the app and the options, hand it the listening sockets
  # (#listen_fd), #run it on the main thread and #stop it from their control thread. This
  # file adds what the C side calls back into: logging.
  class Server
    attr_writer :logger

    def log_io=(io)
      @logger = Log.new(io)
    end

    # Called by the binding, under rescue, when the app, its body or a callback raises. An
    # invalid response is the app's mistake, found by the binding in C: its backtrace would
    # point into UP!, so it is logged with the app's request and the message alone.
    def report_exception(error, env)
      where = env ? "#{env["REQUEST_METHOD"]} #{env["REQUEST_URI"]}" : "building the env"
      if error.is_a?(InvalidResponse)
        log("invalid response from the app to #{where}: #{error.message}")
      else
        log("error in #{where}: #{error.full_message(highlight: false, order: :top)}")
      end
    end

    def log(message)
      (@logger ||= Log.new).call(message)
    end
  end
end
