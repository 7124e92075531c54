# frozen_string_literal: true

module Up
  # A reason the server cannot start that the user can fix (no config.ru, port in use, an app
  # that does not compile). Every launcher raises it; Up::CLI prints its message on one line
  # and exits with status 1.
  class StartError < StandardError; end
end
