# frozen_string_literal: true

# MRI splits Digest by algorithm; here every class lives in digest.rb.
require 'digest'
