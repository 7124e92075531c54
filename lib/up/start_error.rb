# frozen_string_literal: true

module Up
  # A reason the server cannot start that the user can fix (no config.ru, port in use, an app
  # that does not load: Up::LoadFailure words it). Every launcher raises it; Up::CLI (and the
  # rack handler) prints its message on one line and exits with status 1, and with --trace
  # (UP_TRACE=1) the backtrace of its cause, what Ruby or the system raised.
  class StartError < StandardError; end
end
