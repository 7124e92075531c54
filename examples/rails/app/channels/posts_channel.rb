# frozen_string_literal: true

# New posts as they are created (Post broadcasts them), for the index page's live list.
class PostsChannel < ApplicationCable::Channel
  STREAM = "posts"

  def subscribed
    stream_from STREAM
  end
end
